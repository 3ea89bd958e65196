import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { badUpstream, type BadUpstream } from '../helpers/bad-upstream.ts';
import { timed } from '../helpers/eventually.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { Hops, locationOf } from './hops.ts';

/**
 * docs/upstream-identity-providers.md's refusals against a misbehaving upstream: down at start (Latchkey starts anyway, and signs
 * in through it once it is up), HTML instead of metadata, no answer at all, an error at the token
 * endpoint, an id_token with the wrong nonce, audience or signature; then the per-address throttle
 * of failed callbacks. Each is a page naming the upstream (503 unreachable, 400 otherwise), an audit
 * event, one log line, and no session.
 */
describe('a misbehaving upstream', () => {
  let server: TestServer;
  let bad: BadUpstream;
  let flaky: BadUpstream;
  let client: { clientId: string; redirectUri: string };

  beforeAll(async () => {
    bad = await badUpstream(await freePort());
    flaky = await badUpstream(await freePort());
    await flaky.listen();
    const entry = (u: BadUpstream, id: string, name: string) => ({
      id,
      name,
      issuer: u.issuer,
      clientId: u.clientId,
      clientSecret: u.clientSecret,
      timeoutMs: 500,
    });
    // `bad` is not listening yet: an upstream down at start.
    server = await startTestServer('sqlite', {
      identity: { upstreams: [entry(bad, 'bad', 'Bad IdP'), entry(flaky, 'flaky', 'Flaky IdP')] },
      throttle: { addressMaxFailures: 6 },
    });
    client = await server.client();
  });
  afterAll(async () => {
    await server?.stop();
    await bad?.stop();
    await flaky?.stop();
  });

  const authorizeUrl = () =>
    `${server.url}/oauth/v20/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code', state: 'st' })}`;

  /** The login page's "Sign in with <name>": the answer to that form (a redirect away, or an error page). */
  async function choose(hops: Hops, name: string): Promise<Response> {
    const url = authorizeUrl();
    const page = await hops.get(url);
    return hops.submitForm(url, await page.text(), new RegExp(`Sign in with ${name}`));
  }

  /** Chooses the upstream, which sends the browser straight back; returns the callback's answer. */
  async function callback(hops: Hops, name = 'Bad IdP'): Promise<Response> {
    const away = await choose(hops, name);
    expect(away.status).toBe(303);
    const backAt = await hops.get(locationOf(away, server.url));
    return hops.get(locationOf(backAt, server.url));
  }

  const states = async () => {
    const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' });
    const answer = await graphqlPost(server, access_token, '{ identityBackends { id type state up } }');
    return Object.fromEntries((answer.data!.identityBackends as Array<{ id: string; state: string }>).map((b) => [b.id, b.state]));
  };

  const refusedPage = async (res: Response, status: number, name: string, words: RegExp, hops: Hops) => {
    expect(res.status).toBe(status);
    const html = await res.text();
    expect(html).toContain(`Sign-in with ${name} failed`);
    expect(html).toMatch(words);
    expect(html).not.toMatch(/Error:|at .*\(.*:\d+:\d+\)/);
    expect(hops.jar(server.url).has('lk_sso')).toBe(false);
  };

  test('down at start: Latchkey starts, the upstream is unknown, then a 503 page; once it is up, signing in works', async () => {
    expect((await states()).bad).toBe('unknown');
    const hops = new Hops();
    await refusedPage(await choose(hops, 'Bad IdP'), 503, 'Bad IdP', /cannot be reached/, hops);
    expect((await states()).bad).toBe('down');
    const event = await server.sql('audit_events').where({ kind: 'login.failure' }).orderBy('id', 'desc').first();
    expect(JSON.parse(event.details)).toMatchObject({ upstream: 'bad', unavailable: true });
    expect(server.logs.filter((l) => l.includes('"upstream unavailable"'))).toHaveLength(1);

    await bad.listen();
    const ok = new Hops();
    const done = await callback(ok);
    expect(done.status).toBe(303);
    const resumed = await ok.get(locationOf(done, server.url));
    expect(resumed.status).toBe(302);
    expect(new URL(resumed.headers.get('location')!).searchParams.get('code')).toBeTruthy();
    expect((await states()).bad).toBe('up');
  });

  test.each([
    ['wrong-nonce', /nonce/],
    ['wrong-aud', /audience/],
    ['bad-signature', /signature/],
    ['token-error', /invalid_grant/],
  ] as const)('%s: a 400 page naming the upstream, no session, an audit event', async (mode, words) => {
    bad.mode = mode;
    const hops = new Hops();
    await refusedPage(await callback(hops), 400, 'Bad IdP', words, hops);
    const event = await server.sql('audit_events').where({ kind: 'login.failure' }).orderBy('id', 'desc').first();
    expect(JSON.parse(event.details)).toMatchObject({ upstream: 'bad', reason: expect.stringMatching(words) });
    bad.mode = 'good';
  });

  test('HTML instead of metadata, and an upstream that never answers: 503 pages within the timeout', async () => {
    flaky.mode = 'html-discovery';
    const hops = new Hops();
    await refusedPage(await choose(hops, 'Flaky IdP'), 503, 'Flaky IdP', /not JSON/, hops);

    flaky.mode = 'hang';
    const [hung, ms] = await timed(() => choose(new Hops(), 'Flaky IdP'));
    expect(hung.status).toBe(503);
    expect(await hung.text()).toMatch(/did not answer in time/);
    expect(ms).toBeLessThan(3000);

    // A token endpoint that hangs after the metadata was read: the callback gives up too.
    bad.mode = 'hang';
    const waiting = new Hops();
    const [late, lateMs] = await timed(() => callback(waiting));
    await refusedPage(late, 503, 'Bad IdP', /did not answer in time/, waiting);
    expect(lateMs).toBeLessThan(3000);
    bad.mode = 'good';
  });

  test('failed callbacks are counted per address: past the limit, 429 with Retry-After', async () => {
    // Four failures above; forged callbacks (no sign-in started in this browser) count too.
    const forged = `${server.url}/login/upstream/bad/callback?code=x&state=y`;
    let res = await new Hops().get(forged);
    expect(res.status).toBe(400);
    res = await new Hops().get(forged);
    expect(res.status).toBe(400);
    res = await new Hops().get(forged);
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await res.text()).toMatch(/too many failed sign-ins/);
  });
});
