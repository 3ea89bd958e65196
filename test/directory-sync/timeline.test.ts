import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Receiver } from '../helpers/backchannel-receiver.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import type { CodeFlowClient } from '../helpers/flow.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';
import { active, addPerson, dnOf, refreshStatus, signedIn, ssoSignsIn } from './harness.ts';

/** The shortest interval the configuration takes. */
const INTERVAL = 10;
const FAST = { logout: { backchannelRetryDelays: [300, 300, 300], backchannelPollInterval: 100 } };

/**
 * docs/directory-sync.md "What happens when someone leaves", measured: with passes on a schedule, a
 * user locked in the directory has nothing left anywhere within one interval (two at the very most:
 * the pass under way may have read the directory just before the change).
 */
describe.each(databaseKinds)('the leaver timeline on %s', (kind) => {
  let slapd: Slapd;
  let server: TestServer;
  let receiver: Receiver;
  let app: CodeFlowClient;

  beforeAll(async () => {
    slapd = await startSlapd({ ppolicy: true });
    receiver = await Receiver.start();
    server = await startTestServer(kind, { ...ldapChain(ldapBackendConfig(slapd, { sync: { interval: INTERVAL } })), ...FAST });
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

  test(`a user locked in the directory loses everything within ${INTERVAL} s passes, without anyone signing in`, async () => {
    // The schedule's first pass comes soon after the start: it makes the records.
    await eventually('the first scheduled pass', async () => (await server.ctx.directorySync.lastSync('corp'))?.outcome === 'applied', {
      withinMs: 2 * INTERVAL * 1000,
    });
    await addPerson(slapd, 'tim');
    const tim = await signedIn(server, app, 'tim');
    expect(await active(server, app, tim.tokens.access_token)).toBe(true);

    const lockedAt = performance.now();
    await slapd.modify(dnOf('tim'), 'pwdAccountLockedTime', ['000001010000Z']);
    const seen: Record<string, number> = {};
    const mark = (what: string, done: boolean) => {
      if (done && seen[what] === undefined) seen[what] = Math.round(performance.now() - lockedAt);
      return done;
    };
    await eventually(
      'introspection inactive, the SSO cookie refused and the back-channel notice received',
      async () => {
        const results = [
          mark('introspection inactive', !(await active(server, app, tim.tokens.access_token))),
          mark('SSO cookie signs in no more', seen['SSO cookie signs in no more'] !== undefined || !(await ssoSignsIn(tim.browser, app))),
          mark('back-channel logout received', receiver.tokenFor(tim.sid) !== undefined),
        ];
        return results.every(Boolean);
      },
      { withinMs: 2 * INTERVAL * 1000 + 5000, everyMs: 100 },
    );
    expect(await refreshStatus(server, app, tim.tokens.refresh_token)).toBe(400);
    const total = Math.max(...Object.values(seen));
    console.log(
      `leaver timeline on ${kind} (sync.interval ${INTERVAL} s), ms after the directory lock: ${JSON.stringify(seen)}; all gone after ${total} ms`,
    );
    expect(total).toBeLessThan(2 * INTERVAL * 1000 + 5000);
    const events = await server.sql('audit_events').where({ kind: 'user.deprovisioned' });
    expect(events.map((e) => JSON.parse(String(e.details)))).toEqual([expect.objectContaining({ backend: 'corp', reason: 'disabled' })]);
  });
});
