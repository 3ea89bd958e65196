import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { advanceClock, resetClock } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { CookieJar, get, hiddenFields, postForm } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const LIMIT = 5;
const BLOCK_S = 600;

/**
 * `POST /passkey/options` stores a WebAuthn challenge each time it answers, so it is counted per
 * client address like the other per-address limits (`throttle.passkeyMaxOptions` within
 * `throttle.addressWindow`, then blocked for `throttle.addressBlock`): past it, 429 with
 * `Retry-After` in the endpoint's JSON error shape, and no challenge stored.
 */
describe.each(databaseKinds)('passkey options throttled per address on %s', (kind) => {
  let server: TestServer;
  let nextAddress = 1;
  const freshIp = () => `10.77.0.${nextAddress++}`;

  /** A browser at `ip` (the server trusts one proxy hop): its login page's CSRF token, and its options requests. */
  async function browser(ip = freshIp()) {
    const jar = new CookieJar();
    const headers = () => ({ cookie: jar.header(), 'x-forwarded-for': ip });
    const page = await get(`${server.url}/account`, {}, headers());
    jar.store(page);
    const csrf = hiddenFields(await page.text()).csrf_token!;
    return {
      async options() {
        const res = await postForm(`${server.url}/passkey/options`, { csrf_token: csrf, purpose: 'login' }, headers());
        return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> };
      },
    };
  }

  const challenges = async () => Number((await server.sql('webauthn_challenges').count({ n: '*' }).first())?.n);

  beforeAll(async () => {
    const port = await freePort();
    server = await startTestServer(kind, {
      port,
      publicUrl: `http://localhost:${port}`,
      trustProxy: '1',
      throttle: { passkeyMaxOptions: LIMIT, addressBlock: BLOCK_S },
    });
  });
  afterEach(() => resetClock());
  afterAll(() => server.stop());

  test('past the limit one address gets 429 with Retry-After and stores no challenge; another address is not affected', async () => {
    const ip = freshIp();
    const b = await browser(ip);
    for (let i = 0; i < LIMIT; i++) expect((await b.options()).status).toBe(200);
    const stored = await challenges();

    const refused = await b.options();
    expect(refused.status).toBe(429);
    const wait = Number(refused.retryAfter);
    expect(Number.isInteger(wait) && wait > 0 && wait <= BLOCK_S).toBe(true);
    expect(refused.body).toEqual({
      error: 'invalid_request',
      error_description: `too many passkey requests from this address, retry after ${wait} s`,
    });
    expect((await b.options()).status).toBe(429);
    expect(await challenges()).toBe(stored);

    // Another browser from the same address is the same address; another address is not.
    expect((await (await browser(ip)).options()).status).toBe(429);
    expect((await (await browser()).options()).status).toBe(200);
  });

  test('requests arriving at once from one address: no more than the limit are answered', async () => {
    const b = await browser();
    const answers = await Promise.all(Array.from({ length: 4 * LIMIT }, () => b.options()));
    const ok = answers.filter((a) => a.status === 200).length;
    expect(ok).toBeGreaterThan(0);
    expect(ok).toBeLessThanOrEqual(LIMIT);
    expect(answers.filter((a) => a.status === 429).every((a) => Number(a.retryAfter) > 0)).toBe(true);
    expect(ok + answers.filter((a) => a.status === 429).length).toBe(4 * LIMIT);
  });

  test('once the block has passed, the address gets options again', async () => {
    const b = await browser();
    for (let i = 0; i < LIMIT; i++) await b.options();
    const refused = await b.options();
    expect(refused.status).toBe(429);
    advanceClock((Number(refused.retryAfter) + 1) * 1000);
    expect((await b.options()).status).toBe(200);
  });
});
