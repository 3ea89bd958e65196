// Preloaded (`node --import`) into a Latchkey process by tracing.test.ts: records every @opentelemetry
// module the process loads, by ESM import (the resolve hook, module-log-hooks.mjs) or by require (the
// CommonJS cache, read at exit), one line each in the file MODULE_LOG names.
import { appendFileSync, writeFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';

const file = process.env.MODULE_LOG;
if (!file) throw new Error('module-log.mjs needs MODULE_LOG');
writeFileSync(file, '');
register(new URL('./module-log-hooks.mjs', import.meta.url), { data: { file } });
const require = createRequire(import.meta.url);
process.on('exit', () => {
  const required = Object.keys(require.cache).filter((path) => path.includes('@opentelemetry'));
  appendFileSync(file, required.map((path) => `require ${path}\n`).join(''));
  appendFileSync(file, 'exit\n');
});
