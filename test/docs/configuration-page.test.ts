import { readFileSync } from 'node:fs';
import { describe, expect, test } from '@jest/globals';
import { parse as parseYaml } from 'yaml';
import { expectedPages, firstDifference, referenceRows } from '../../scripts/config-docs.ts';
import { loadConfig } from '../../src/config/load.ts';
import { configSchema } from '../../src/config/schema.ts';

const root = new URL('../../', import.meta.url);

/** A value each environment variable may take, and the key's value it must then have. */
const samples: Record<string, [string, unknown]> = {
  PORT: ['9090', 9090],
  HOST: ['127.0.0.1', '127.0.0.1'],
  PUBLIC_URL: ['https://sso.example.com', 'https://sso.example.com'],
  DATABASE_URL: ['postgres://latchkey@db.example.com:5432/latchkey', 'postgres://latchkey@db.example.com:5432/latchkey'],
  LATCHKEY_SECRET: ['a-secret-of-at-least-thirty-two-characters', 'a-secret-of-at-least-thirty-two-characters'],
  LOG_LEVEL: ['debug', 'debug'],
  TRUST_PROXY: ['1', '1'],
  WORKERS: ['3', 3],
  METRICS_TOKEN: ['a-metrics-token-of-some-length', 'a-metrics-token-of-some-length'],
  SMTP_URL: ['smtp://mail.example.com:587', 'smtp://mail.example.com:587'],
  SMTP_FROM: ['Latchkey <sso@example.com>', 'Latchkey <sso@example.com>'],
  PASSWORD_RESET_ENABLED: ['true', true],
  LATCHKEY_ADMIN_USERNAME: ['root', 'root'],
  LATCHKEY_ADMIN_PASSWORD: ['correct horse battery', 'correct horse battery'],
};

const at = (value: unknown, key: string) =>
  key.split('.').reduce<unknown>((node, k) => (node as Record<string, unknown> | undefined)?.[k], value);

/** docs/configuration.md's reference and the LDAP backend's in docs/identity-backends.md, against their schemas. */
describe('the generated configuration reference', () => {
  test.each(expectedPages().map((p) => [p.file, p] as const))('%s is what scripts/config-docs.ts writes from the schema', (_file, page) => {
    if (page.actual !== page.expected) {
      throw new Error(
        `${page.file} is stale: run \`node --import tsx scripts/config-docs.ts\`. First difference at ${firstDifference(page.actual, page.expected)}`,
      );
    }
  });

  test('every environment variable the reference names sets its key, and src/config/load.ts reads no other', () => {
    const documented = referenceRows(configSchema).filter((r) => r.env);
    const read = [...readFileSync(new URL('src/config/load.ts', root), 'utf8').matchAll(/\['([A-Z][A-Z0-9_]*)', \[([^\]]*)\]\]/g)].map(
      ([, name, path]) => ({
        name: name!,
        key: [...path!.matchAll(/'([^']+)'/g)].map((m) => m[1]).join('.'),
      }),
    );
    expect(read.length).toBeGreaterThan(10);
    expect(documented.map((r) => `${r.env} → ${r.key}`).sort()).toEqual(read.map((r) => `${r.name} → ${r.key}`).sort());
    // Sent to the loader itself: the variable really lands on the key the page says.
    const env = Object.fromEntries(documented.map((r) => [r.env!, samples[r.env!]?.[0]]));
    const config = loadConfig(env);
    for (const row of documented) {
      if (!samples[row.env!]) throw new Error(`no sample value for ${row.env} in this test`);
      expect([row.env, at(config, row.key)]).toEqual([row.env, samples[row.env!]![1]]);
    }
  });

  test("the page's YAML examples are valid configurations", () => {
    const page = readFileSync(new URL('docs/configuration.md', root), 'utf8');
    const blocks = [...page.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) expect(() => loadConfig({}, parseYaml(block) as Record<string, unknown>)).not.toThrow();
  });
});
