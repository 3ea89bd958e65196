import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CLI_ACTOR } from '../../src/audit/record.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { failInsertsInto } from '../helpers/db-fault.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * An administrator's reset of a user's second factors is an admin change: its deletes and its
 * `admin.change` event commit together or not at all. A reset whose audit event cannot be written
 * must leave every factor in place.
 */
describe.each(databaseKinds)('mfa.reset on %s', (kind) => {
  let server: TestServer;
  let userId: string;

  const factorsOf = async (id: string) => {
    const count = async (table: string) => Number((await server.sql(table).where({ user_id: id }).count({ n: '*' }).first())?.n);
    return { totp: await count('user_totp'), passkeys: await count('passkeys'), recoveryCodes: await count('recovery_codes') };
  };

  beforeAll(async () => {
    server = await startTestServer(kind);
    userId = await server.user('dana', 'dana-password-1');
    const now = Date.now();
    await server
      .sql('user_totp')
      .insert({ user_id: userId, secret_enc: 'not-read-by-this-test', confirmed_at: now, last_step: 0, created_at: now });
    await server.sql('passkeys').insert({
      credential_id: 'credential-1',
      user_id: userId,
      public_key: 'not-read',
      counter: 0,
      transports: '[]',
      name: 'Key',
      created_at: now,
    });
    await server
      .sql('recovery_codes')
      .insert([1, 2].map((n) => ({ code_hash: `hash-${n}`, user_id: userId, used_at: null, created_at: now })));
  });
  afterAll(() => server.stop());

  test('a reset whose audit event fails removes no factor', async () => {
    expect(await factorsOf(userId)).toEqual({ totp: 1, passkeys: 1, recoveryCodes: 2 });
    const fault = await failInsertsInto(server.db, 'audit_events');
    let outcome: string;
    try {
      // By message: better-sqlite3 makes its errors with the Error class of the first test file that
      // loaded it, which `toThrow` does not recognise in another.
      outcome = await server.ctx.mfa.reset(userId, CLI_ACTOR).then(
        () => 'resolved',
        (err: Error) => err.message,
      );
    } finally {
      await fault.remove();
    }
    expect(outcome).toMatch(/injected fault/);
    expect(await factorsOf(userId)).toEqual({ totp: 1, passkeys: 1, recoveryCodes: 2 });
  });

  test('with the database working again, the reset removes every factor and is audited', async () => {
    await server.ctx.mfa.reset(userId, CLI_ACTOR);
    expect(await factorsOf(userId)).toEqual({ totp: 0, passkeys: 0, recoveryCodes: 0 });
    const events = await server.sql('audit_events').where({ kind: 'admin.change' }).select('details');
    expect(events.map((e: { details: string }) => JSON.parse(e.details).action)).toContain('user.reset_mfa');
  });
});
