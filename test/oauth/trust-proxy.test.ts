import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { basic, get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Behind a reverse proxy (docs/endpoints.md): `X-Forwarded-*` is believed only when TRUST_PROXY says so. The
 * address matters for the per-address brute-force block and the audit trail; the issuer is always
 * PUBLIC_URL, whatever Host or X-Forwarded-Host a request carries.
 */
describe('TRUST_PROXY', () => {
  const policy = { throttle: { addressMaxFailures: 3 } };
  let direct: TestServer;
  let proxied: TestServer;

  const attempt = (
    s: TestServer,
    c: { clientId: string; clientSecret: string | null },
    username: string,
    password: string,
    forwardedFor: string,
  ) =>
    postForm(
      `${s.url}/oauth/v20/token`,
      { grant_type: 'password', username, password },
      { authorization: basic(c.clientId, c.clientSecret!), 'x-forwarded-for': forwardedFor },
    );

  beforeAll(async () => {
    direct = await startTestServer('sqlite', policy);
    proxied = await startTestServer('sqlite', { ...policy, trustProxy: 'loopback' });
    for (const s of [direct, proxied]) await s.user('kai', 'kai-password-1');
  });
  afterAll(async () => {
    await direct?.stop();
    await proxied?.stop();
  });

  test('unset: a forged X-Forwarded-For does not escape the per-address block', async () => {
    const c = await direct.client({ grantTypes: ['password'] });
    for (const [i, name] of ['x1', 'x2', 'x3'].entries())
      expect((await attempt(direct, c, name, 'wrong', `198.51.100.${i}`)).status).toBe(400);
    const blocked = await attempt(direct, c, 'kai', 'kai-password-1', '198.51.100.99');
    expect(blocked.status).toBe(429);
    const events = await direct.sql('audit_events').where({ kind: 'login.failure' }).select('ip');
    expect(new Set(events.map((e: { ip: string }) => e.ip))).toEqual(new Set(['127.0.0.1']));
  });

  test('set: the client address comes from the proxy, so one client is blocked and another is not', async () => {
    const c = await proxied.client({ grantTypes: ['password'] });
    for (const name of ['y1', 'y2', 'y3']) expect((await attempt(proxied, c, name, 'wrong', '203.0.113.7')).status).toBe(400);
    expect((await attempt(proxied, c, 'kai', 'kai-password-1', '203.0.113.7')).status).toBe(429);
    expect((await attempt(proxied, c, 'kai', 'kai-password-1', '198.51.100.2')).status).toBe(200);
    const events = await proxied.sql('audit_events').where({ kind: 'login.failure' }).select('ip');
    expect(new Set(events.map((e: { ip: string }) => e.ip))).toEqual(new Set(['203.0.113.7']));
  });

  test('TRUST_PROXY=true logs a warning at start naming the risk; a hop count or addresses do not', async () => {
    const everyHop = await startTestServer('sqlite', { ...policy, trustProxy: 'true' });
    try {
      const warnings = everyHop.logs.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => /TRUST_PROXY/.test(l.msg));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.level).toBe(40);
      expect(warnings[0]!.msg).toMatch(/any client can choose the address/);
      expect(warnings[0]!.msg).toMatch(/per-address brute-force block/);
      expect(warnings[0]!.msg).toMatch(/TRUST_PROXY=1/);
      // The risk it names: every forged X-Forwarded-For is a new address, so the block never comes.
      await everyHop.user('kai', 'kai-password-1');
      const c = await everyHop.client({ grantTypes: ['password'] });
      for (const [i, name] of ['z1', 'z2', 'z3'].entries())
        expect((await attempt(everyHop, c, name, 'wrong', `203.0.113.${i}`)).status).toBe(400);
      expect((await attempt(everyHop, c, 'kai', 'kai-password-1', '203.0.113.99')).status).toBe(200);
    } finally {
      await everyHop.stop();
    }
    for (const s of [direct, proxied]) expect(s.logs.filter((l) => l.includes('TRUST_PROXY'))).toEqual([]);
    const counted = await startTestServer('sqlite', { trustProxy: '1' });
    await counted.stop();
    expect(counted.logs.filter((l) => l.includes('TRUST_PROXY'))).toEqual([]);
  });

  test('the issuer is PUBLIC_URL whatever the forwarded host and scheme say', async () => {
    const res = await get(
      `${proxied.url}/.well-known/openid-configuration`,
      {},
      { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https', host: 'evil.example' },
    );
    const meta = (await res.json()) as { issuer: string; token_endpoint: string };
    expect(meta.issuer).toBe(proxied.ctx.config.publicUrl);
    expect(meta.token_endpoint).toBe(`${proxied.ctx.config.publicUrl}/oauth/v20/token`);
  });
});
