/** ESM + swc: TypeScript 7 has no JS compiler API, so ts-jest cannot run; @swc/jest strips types fast. */
export default {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' } }],
  },
  // Generous: a fresh CI machine starts Chromium and compiles the first transforms cold.
  testTimeout: 120000,
};
