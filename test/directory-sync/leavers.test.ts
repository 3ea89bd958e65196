import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { BASE_DN } from '../fixtures/ldap/directory.ts';
import { adminCliToken } from '../helpers/admin-api.ts';
import { Receiver, verifyLogoutToken } from '../helpers/backchannel-receiver.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import type { CodeFlowClient } from '../helpers/flow.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';
import {
  active,
  addPerson,
  deleteEntry,
  dnOf,
  moveEntry,
  passwordOf,
  refreshStatus,
  signedIn,
  type SignedIn,
  ssoSignsIn,
  syncNow,
} from './harness.ts';

/** Short back-off and a quick poll, so a notice is delivered within the test. */
const FAST = { logout: { backchannelRetryDelays: [300, 300, 300], backchannelPollInterval: 100 } };

/**
 * Leavers (docs/directory-sync.md "What happens when someone leaves"): whatever way the directory lets
 * someone go, one pass takes everything from them, and the audit trail says which backend and why.
 */
describe.each(databaseKinds)('directory sync of leavers on %s', (kind) => {
  let slapd: Slapd;
  let server: TestServer;
  let receiver: Receiver;
  let token: string;
  let app: CodeFlowClient;

  beforeAll(async () => {
    slapd = await startSlapd({ ppolicy: true });
    receiver = await Receiver.start();
    // The filter leaves out anyone whose description says they left: a way a directory lets people go.
    const userSearch = { baseDN: `ou=people,${BASE_DN}`, filter: '(&(objectClass=inetOrgPerson)(!(description=left))(uid={username}))' };
    server = await startTestServer(kind, {
      ...ldapChain(ldapBackendConfig(slapd, { userSearch, sync: { interval: 0, maxLeaverShare: 0.9 } })),
      ...FAST,
    });
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
    app = await server.client({
      scopes: ['openid'],
      grantTypes: ['authorization_code', 'refresh_token'],
      backchannelLogoutUri: receiver.uri,
    });
  });
  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
    await slapd?.destroy();
  });

  test('locked, deleted, moved out of the base, excluded by the filter: each deprovisioned, with nothing left anywhere', async () => {
    const leavers = { locked: 'lou', deleted: 'del', moved: 'mo', filtered: 'fil' } as const;
    for (const uid of Object.values(leavers)) await addPerson(slapd, uid);
    await addPerson(slapd, 'stay');
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', created: 8 });
    const sessions = new Map<string, SignedIn>();
    for (const uid of [...Object.values(leavers), 'stay']) sessions.set(uid, await signedIn(server, app, uid));

    await slapd.modify(dnOf(leavers.locked), 'pwdAccountLockedTime', ['000001010000Z']);
    await deleteEntry(slapd, dnOf(leavers.deleted));
    await moveEntry(slapd, dnOf(leavers.moved), `uid=${leavers.moved},ou=services,${BASE_DN}`);
    await slapd.modify(dnOf(leavers.filtered), 'description', ['left']);

    const { pass } = await syncNow(server, token);
    expect(pass).toMatchObject({ outcome: 'APPLIED', created: 0, deprovisioned: 4, reenabled: 0, error: null });

    const reasons = { locked: 'disabled', deleted: 'not_found', moved: 'not_found', filtered: 'not_found' } as const;
    for (const [how, uid] of Object.entries(leavers) as Array<[keyof typeof leavers, string]>) {
      const s = sessions.get(uid)!;
      const user = (await server.ctx.users.findByUsername('corp', uid))!;
      expect({ uid, disabled: user.disabled, disabledBy: user.disabledBy }).toEqual({ uid, disabled: true, disabledBy: 'directory' });
      // Introspection answers inactive at once, the refresh token is refused, the SSO cookie signs in no more.
      expect({ uid, active: await active(server, app, s.tokens.access_token) }).toEqual({ uid, active: false });
      expect({ uid, refresh: await refreshStatus(server, app, s.tokens.refresh_token) }).toEqual({ uid, refresh: 400 });
      expect({ uid, sso: await ssoSignsIn(s.browser, app) }).toEqual({ uid, sso: false });
      // The application is told by back-channel logout.
      await eventually(`the back-channel logout of ${uid}`, async () => receiver.tokenFor(s.sid) !== undefined);
      expect(await verifyLogoutToken(server, receiver.tokenFor(s.sid)!, app.clientId)).toMatchObject({ sub: user.id, sid: s.sid });
      const events = await server.sql('audit_events').where({ kind: 'user.deprovisioned', user_id: user.id });
      expect(events.map((e) => JSON.parse(String(e.details)))).toEqual([
        { backend: 'corp', reason: reasons[how], sessions: 1, tokens: expect.any(Number) },
      ]);
    }

    // The one who stayed keeps everything.
    const stay = sessions.get('stay')!;
    expect(await active(server, app, stay.tokens.access_token)).toBe(true);
    expect(await ssoSignsIn(stay.browser, app)).toBe(true);
    expect(receiver.tokenFor(stay.sid)).toBeUndefined();

    // Gone is gone: the next pass finds nothing more to do.
    expect((await syncNow(server, token)).pass).toMatchObject({
      outcome: 'APPLIED',
      created: 0,
      updated: 0,
      deprovisioned: 0,
      reenabled: 0,
    });
  });

  test('a lockout by failed binds is no leaving: the pass leaves the user alone, while their password sign-in is refused', async () => {
    await addPerson(slapd, 'guessed');
    await syncNow(server, token);
    // What ppolicy writes after too many failed binds (anyone who knows the name can cause it): the
    // time of the lockout, not an administrator's 000001010000Z.
    const now = new Date()
      .toISOString()
      .replace(/[-:T]/g, '')
      .replace(/\.\d+Z$/, 'Z');
    await slapd.modify(dnOf('guessed'), 'pwdAccountLockedTime', [now]);
    expect((await syncNow(server, token)).pass).toMatchObject({ outcome: 'APPLIED', deprovisioned: 0 });
    expect(await server.ctx.users.findByUsername('corp', 'guessed')).toMatchObject({ disabled: false, disabledBy: null });
    const signIn = await server.ctx.identity.signIn('guessed', passwordOf('guessed'));
    expect(signIn.ok).toBe(false);
    await slapd.modify(dnOf('guessed'), 'pwdAccountLockedTime', []);
  });

  test('a new entry given the name of one that left takes the name; the old record is kept as name~id', async () => {
    await addPerson(slapd, 'sam');
    await syncNow(server, token);
    const old = (await server.ctx.users.findByUsername('corp', 'sam'))!;
    await deleteEntry(slapd, dnOf('sam'));
    await addPerson(slapd, 'sam', { cn: 'Another Sam' });
    const { pass } = await syncNow(server, token);
    expect(pass).toMatchObject({ outcome: 'APPLIED', created: 1, deprovisioned: 1 });
    const now = (await server.ctx.users.findByUsername('corp', 'sam'))!;
    expect(now.id).not.toBe(old.id);
    expect(now).toMatchObject({ displayName: 'Another Sam', disabled: false });
    expect(await server.ctx.users.find(old.id)).toMatchObject({ username: `sam~${old.id}`, disabled: true, disabledBy: 'directory' });
    // A retired record is no leaver again.
    expect((await syncNow(server, token)).pass).toMatchObject({ created: 0, updated: 0, deprovisioned: 0 });
  });
});
