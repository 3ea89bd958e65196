import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, test } from '@jest/globals';

/**
 * The layer check (scripts/check-layers.ts, docs/development.md "The house") run on small trees made
 * here: each rule it holds must fail on a tree that breaks it, naming the file and line, and pass a
 * tree that keeps it.
 */
const run = promisify(execFile);
const script = new URL('../../scripts/check-layers.ts', import.meta.url).pathname;
const made: string[] = [];

async function check(files: Record<string, string>): Promise<{ ok: boolean; out: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'layers-'));
  made.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  mkdirSync(join(dir, 'plugins'), { recursive: true });
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', script, dir]);
    return { ok: true, out: stdout };
  } catch (err) {
    return { ok: false, out: String((err as { stderr?: string }).stderr) };
  }
}

afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

const model = { 'src/users/model.ts': 'export interface User { id: string }\n' };

describe('the layer check', () => {
  test('a tree that keeps every rule passes', async () => {
    const result = await check({
      ...model,
      'src/users/queries.ts':
        "import type { User } from './model.ts';\nexport const userQueries = () => ({ find: (): User | undefined => undefined });\nexport type UserQueries = ReturnType<typeof userQueries>;\n",
      'src/users/service.ts':
        "import type { UserQueries } from './queries.ts';\nimport type { User } from './model.ts';\nexport const users = (q: UserQueries): User | undefined => q.find();\n",
      'src/web/page.ts': "import type { User } from '../users/model.ts';\nexport const page = (u: User) => u.id;\n",
      'src/oauth/route.ts': "import { page } from '../web/page.ts';\nexport const route = page;\n",
      'src/identity/plugin-kit.ts': 'export const kit = 1;\n',
      'plugins/mine/index.ts':
        "import { kit } from '../../src/identity/plugin-kit.ts';\nimport { helper } from './helper.ts';\nexport default kit + helper;\n",
      'plugins/mine/helper.ts': 'export const helper = 1;\n',
    });
    expect(result).toEqual({ ok: true, out: 'layers: ok\n' });
  });

  test('the HTTP layer writing an audit event fails', async () => {
    const result = await check({
      'src/web/consent.ts': "export const go = async (ctx: any) => { await ctx.audit.record({ kind: 'consent.granted' }); };\n",
    });
    expect(result.ok).toBe(false);
    expect(result.out).toContain('src/web/consent.ts:1: the HTTP layer records an audit event');
  });

  test('an admin change written by a resolver fails too', async () => {
    const result = await check({
      'src/admin/resolvers/users.ts': "export const go = (app: any) => app.audit.change('user.update', {});\n",
    });
    expect(result.out).toContain('src/admin/resolvers/users.ts:1: the HTTP layer records an audit event');
  });

  test('web importing oauth fails', async () => {
    const result = await check({
      'src/oauth/params.ts': 'export const readParams = () => ({});\n',
      'src/web/device.ts': "\nimport { readParams } from '../oauth/params.ts';\nexport const device = readParams;\n",
    });
    expect(result.ok).toBe(false);
    expect(result.out).toContain('src/web/device.ts:2: web imports oauth (src/oauth/params.ts)');
  });

  test('a plugin importing the server beyond the kit fails', async () => {
    const result = await check({
      ...model,
      'src/users/queries.ts': 'export const userQueries = () => ({});\n',
      'src/identity/plugin-kit.ts': 'export const kit = 1;\n',
      'plugins/db/index.ts': "import { userQueries } from '../../src/users/queries.ts';\nexport default userQueries;\n",
    });
    expect(result.ok).toBe(false);
    expect(result.out).toContain('plugins/db/index.ts:1: a plugin imports src/users/queries.ts; plugins use only the plugin kit');
  });

  test('a domain type taken from a queries module fails; its Queries type does not', async () => {
    const result = await check({
      'src/users/queries.ts':
        'export interface User { id: string }\nexport const userQueries = () => ({});\nexport type UserQueries = ReturnType<typeof userQueries>;\n',
      'src/tokens/service.ts':
        "import type { User, UserQueries } from '../users/queries.ts';\nexport const f = (u: User, q: UserQueries) => [u, q];\n",
    });
    expect(result.ok).toBe(false);
    expect(result.out).toContain(
      'src/tokens/service.ts:1: takes User from a queries module (src/users/queries.ts); types live in model modules',
    );
    expect(result.out).not.toContain('takes User, UserQueries');
  });

  test('a model module reaching up into a service fails (models sit under the database)', async () => {
    const result = await check({
      'src/users/service.ts': 'export const limit = 3;\n',
      'src/users/model.ts': "import { limit } from './service.ts';\nexport const LIMIT = limit;\n",
    });
    expect(result.ok).toBe(false);
    expect(result.out).toContain('src/users/model.ts:1: an import runs back up: model → services');
  });
});
