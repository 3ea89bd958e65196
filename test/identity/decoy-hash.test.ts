import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { people } from '../fixtures/ldap/directory.ts';
import { eventually } from '../helpers/eventually.ts';
import { basic, postForm } from '../helpers/http.ts';
import { spawnLatchkey, type LatchkeyProcess } from '../helpers/latchkey-process.ts';
import { spansBelow, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, startSlapd, type Slapd } from '../helpers/slapd.ts';

/**
 * docs/identity-backends.md "An unknown name takes as long as a wrong password", seen in the spans an
 * operator's collector receives (docs/tracing.md), not in timings: with the `database` backend in front
 * of a directory, a directory user's sign-in holds no argon2 `password verify` (the database's "not
 * mine" costs no hash), while a name nobody holds costs exactly one, as a database user's wrong or
 * right password does.
 */

const SPAN_SERVER = 2;
/** startTestServer's secret: the traced process shares its database, so its client secrets too. */
const SECRET = 'test-secret-test-secret-test-secret-0123';
const DANA_PASSWORD = 'dana-local-password-47';
/** What a failed password grant answers, whoever holds the name (docs/endpoints.md "Error codes"). */
const WRONG = { error: 'invalid_grant', error_description: 'invalid username or password' };

describe('the decoy hash of the identity chain, database backend first', () => {
  let receiver: OtlpReceiver;
  let slapd: Slapd;
  let server: TestServer;
  let latchkey: LatchkeyProcess;
  let dir: string;
  let app: { clientId: string; clientSecret: string | null };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'latchkey-decoy-'));
    receiver = await startOtlpReceiver();
    slapd = await startSlapd();
    const identity = {
      backends: [
        { id: 'local', plugin: 'database' },
        { id: 'corp', plugin: 'ldap', config: ldapBackendConfig(slapd) },
      ],
    };
    // The client and the database user are made through the services of an in-process server on the same database.
    server = await startTestServer('sqlite', { identity });
    app = await server.client({ grantTypes: ['password'] });
    await server.user('dana', DANA_PASSWORD);

    const config = join(dir, 'latchkey.yaml');
    writeFileSync(config, JSON.stringify({ identity }));
    latchkey = await spawnLatchkey({
      DATABASE_URL: server.db.url,
      LATCHKEY_SECRET: SECRET,
      LATCHKEY_CONFIG: config,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      // Sent every 100 ms rather than every 5 s, so the tests wait less.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
  }, 180_000);

  afterAll(async () => {
    await latchkey?.stop();
    await server?.stop();
    await slapd?.destroy();
    await receiver?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const below = (root: ReceivedSpan) => spansBelow(receiver.spans, root);

  /**
   * A password grant in a trace of its own (the caller's traceparent), and the names of the spans
   * below its server span once that is exported. The sign-in's spans end before the response, so
   * before the server span; the batch processor exports spans one export at a time, in the order they
   * ended: once the server span is here, so is every span of the sign-in, and an absent one was never made.
   */
  async function passwordGrant(username: string, password: string) {
    const traceId = randomBytes(16).toString('hex');
    const res = await postForm(
      `${latchkey.url}/oauth/v20/token`,
      { grant_type: 'password', username, password },
      { authorization: basic(app.clientId, app.clientSecret!), traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    );
    const body = (await res.json()) as Record<string, unknown>;
    let root: ReceivedSpan | undefined;
    await eventually(`the server span of the grant for ${username}`, async () => {
      root = receiver.spans.find((s) => s.kind === SPAN_SERVER && s.name === 'POST /oauth/v20/token' && s.traceId === traceId);
      return root !== undefined;
    });
    const spans = below(root!).map((s) => s.name);
    return { status: res.status, body, spans, verifies: spans.filter((n) => n === 'password verify').length };
  }

  test('a directory user behind the database backend signs in without an argon2 hash', async () => {
    const grant = await passwordGrant('alice', people.alice.password);
    expect(grant.status).toBe(200);
    expect(grant.body.access_token).toEqual(expect.any(String));
    // The directory checked the password (its bind is in the trace); nothing hashed one.
    expect(grant.spans).toContain('LDAP bind');
    expect(grant.verifies).toBe(0);
  });

  test('a name no backend holds: invalid_grant, after exactly one decoy hash', async () => {
    const grant = await passwordGrant('nobody-by-this-name', 'some-guess-123');
    expect(grant.status).toBe(400);
    expect(grant.body).toEqual(WRONG);
    // Both backends were asked (the directory searched for the name), and one decoy was hashed for both.
    expect(grant.spans).toContain('LDAP search');
    expect(grant.verifies).toBe(1);
  });

  test('a database user: one hash for a wrong password, one for the right one, and the directory is never asked', async () => {
    const wrong = await passwordGrant('dana', 'not-danas-password');
    expect(wrong.status).toBe(400);
    // The same answer as for a name nobody holds.
    expect(wrong.body).toEqual(WRONG);
    expect(wrong.verifies).toBe(1);
    expect(wrong.spans.filter((n) => n.startsWith('LDAP '))).toEqual([]);

    const right = await passwordGrant('dana', DANA_PASSWORD);
    expect(right.status).toBe(200);
    expect(right.verifies).toBe(1);
    expect(right.spans.filter((n) => n.startsWith('LDAP '))).toEqual([]);
  });

  test('a directory user’s wrong password is the directory’s answer alone: no argon2 hash', async () => {
    const grant = await passwordGrant('alice', 'not-alices-password');
    expect(grant.status).toBe(400);
    expect(grant.body).toEqual(WRONG);
    expect(grant.spans).toContain('LDAP bind');
    expect(grant.verifies).toBe(0);
  });
});
