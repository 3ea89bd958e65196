import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Attribute, Change } from 'ldapts';
import { stringify } from 'yaml';
import { CLI_ACTOR } from '../../src/audit/record.ts';
import { AUTHN_CONTEXT } from '../../src/saml/assertion.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import type { DatabaseKind } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { get, hiddenFields, postForm } from '../helpers/http.ts';
import { KERBEROS_HOST, kerberosFixture, SERVICE_PRINCIPAL, type KerberosFixture, type Tickets } from '../helpers/kerberos.ts';
import { spawnLatchkey } from '../helpers/latchkey-process.ts';
import { sample, scrape } from '../helpers/metrics.ts';
import { freePort } from '../helpers/ports.ts';
import { AD_BASE_DN, AD_REALM } from '../helpers/samba.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapChain } from '../helpers/slapd.ts';
import { serverNow } from '../helpers/clock.ts';
import { codeAt } from '../helpers/totp.ts';
import { adConfig, dc } from './harness.ts';

type App = { clientId: string; clientSecret: string | null; redirectUri: string };

/** The claims of a JWT, unverified (the tests of id_tokens' signatures are elsewhere). */
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

/** NTLM's first message (NEGOTIATE_MESSAGE), as Windows sends it inside Negotiate when it has no ticket. */
const NTLM_NEGOTIATE = Buffer.from('TlRMTVNTUAABAAAAB4IIogAAAAAAAAAAAAAAAAAAAAAKAGFKAAAADw==', 'base64');

/** A DER element (definite length). */
function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const length = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
}

/** SPNEGO's NegTokenInit offering NTLM only, with NTLM's first message as its optimistic token (RFC 4178 4.2.1). */
function spnegoNtlm(): string {
  const oid = (hex: string) => der(0x06, Buffer.from(hex, 'hex'));
  const spnego = oid('2b0601050502');
  const ntlm = oid('2b06010401823702020a');
  const init = der(0x30, der(0xa0, der(0x30, ntlm)), der(0xa2, der(0x04, NTLM_NEGOTIATE)));
  return der(0x60, spnego, der(0xa0, init)).toString('base64');
}

/** The same token with every clear-text mention of the realm (the ticket's) changed to another of the same length. */
const otherRealm = (token: string): string =>
  Buffer.from(Buffer.from(token, 'base64').toString('latin1').replaceAll(AD_REALM, 'LATCHKEY.FAKE'), 'latin1').toString('base64');

/** `11/28/26 02:21:05` (klist, in UTC) as ms since the epoch. */
function klistTime(text: string): number {
  const [, mm, dd, yy, h, m, s] = /(\d\d)\/(\d\d)\/(\d\d) (\d\d):(\d\d):(\d\d)/.exec(text)!.map(Number);
  return Date.UTC(2000 + yy!, mm! - 1, dd!, h!, m!, s!);
}
const utc = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

/**
 * Desktop single sign-on against the Samba DC's KDC (docs/identity-backends.md "Desktop single sign-on"): users `kinit`
 * with their password, then curl, Python requests-kerberos and plain requests carrying a Negotiate
 * token reach the applications without the login form; every refusal the contract lists shows the form
 * with its words, an audit event and a metric. `all` runs every case (the rest run on one database).
 */
export function kerberosTests(kind: DatabaseKind, { all = true } = {}): void {
  describe(`desktop single sign-on (Kerberos) on ${kind}`, () => {
    // Names per database: both runs share the domain. sAMAccountName holds at most 20 characters.
    const k = kind === 'sqlite' ? 's' : 'p';
    const carol = { name: `kcarol${k}`, password: `Kcarol-${k}-Pw-123!` };
    let krb: KerberosFixture;
    let server: TestServer;
    let base: string;
    let app: App;
    let formOnly: App;
    let carolTickets: Tickets;

    const authorizeUrl = (client: App, extra: Record<string, string> = {}) =>
      `${base}/oauth/v20/authorize?${new URLSearchParams({
        client_id: client.clientId,
        redirect_uri: client.redirectUri,
        response_type: 'code',
        scope: 'openid profile email',
        state: 'st-k',
        ...extra,
      })}`;
    const withToken = (url: string, token: string, cookie?: string) =>
      get(url, {}, { authorization: `Negotiate ${token}`, ...(cookie ? { cookie } : {}) });
    const refusedCount = async (reason: string) => sample(await scrape(base), 'latchkey_kerberos_refused_total', { reason });
    const lastRefusal = async () => {
      const row = (await server.sql('audit_events').where({ kind: 'login.kerberos_refused' }).orderBy('id', 'desc').first()) as
        | { details: string; user_id: string | null; client_id: string | null }
        | undefined;
      return row && { ...row, details: JSON.parse(row.details) as Record<string, unknown> };
    };
    /** A user made, their ticket cache. */
    const userWithTickets = async (name: string, password: string, options: { outside?: boolean } = {}) => {
      await krb.user(name, password, options);
      return krb.kinit(name, password);
    };

    /**
     * The token sent at the authorize endpoint is refused for `reason`: the login form (401, no new
     * challenge) with `words`, the audit event, one more in the metric, no session.
     */
    async function expectRefused(token: string, reason: string, words: RegExp) {
      const before = await refusedCount(reason);
      const res = await withToken(authorizeUrl(app), token);
      const html = await res.text();
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBeNull();
      expect(html).toMatch(words);
      expect(html).toContain('name="password"');
      expect(res.headers.getSetCookie().some((c) => c.startsWith('lk_sso='))).toBe(false);
      expect(await refusedCount(reason)).toBe(before + 1);
      expect((await lastRefusal())?.details).toMatchObject({ reason });
      return lastRefusal();
    }

    beforeAll(async () => {
      krb = await kerberosFixture(dc());
      const port = await freePort();
      server = await startTestServer(kind, { ...krb.serverAt(port), ...ldapChain(adConfig({ kerberos: krb.backendConfig() })) });
      base = `http://${new URL(server.ctx.config.publicUrl).host}`;
      app = await server.client();
      formOnly = await server.client({ kerberos: false });
      carolTickets = await userWithTickets(carol.name, carol.password);
    });
    afterAll(async () => {
      await server?.stop();
    });

    test('a browser without a session gets the login form with 401 and WWW-Authenticate: Negotiate; a kerberos: false client only the form', async () => {
      const res = await get(authorizeUrl(app));
      const html = await res.text();
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Negotiate');
      // The same form as ever, with its CSRF token: a browser without a ticket shows it at once.
      expect(html).toContain('name="password"');
      expect(hiddenFields(html).csrf_token).toBeTruthy();

      const plain = await get(authorizeUrl(formOnly));
      expect(plain.status).toBe(200);
      expect(plain.headers.get('www-authenticate')).toBeNull();
      // A ticket sent anyway is not looked at: no session, the form.
      const sent = await withToken(authorizeUrl(formOnly), await krb.token(carolTickets));
      expect(sent.status).toBe(200);
      expect(await sent.text()).toContain('name="password"');
      expect(sent.headers.getSetCookie().some((c) => c.startsWith('lk_sso='))).toBe(false);
    });

    test('kinit, then curl --negotiate: a code with no form; the id_token says amr wia, the answer carries the mutual token', async () => {
      const answer = await krb.curl(carolTickets, authorizeUrl(app));
      // A GET's redirect (docs/decisions.md): back to the application with the code.
      expect(answer.status).toBe(302);
      const location = new URL(answer.headers.location!);
      expect(`${location.origin}${location.pathname}`).toBe(app.redirectUri);
      const code = location.searchParams.get('code')!;
      expect(code).toBeTruthy();
      // RFC 4559 5: the server's half of mutual authentication.
      expect(answer.headers['www-authenticate']).toMatch(/^Negotiate [A-Za-z0-9+/]+=*$/);

      const tokens = (await (await exchangeCode(server, app, code)).json()) as { id_token: string; access_token: string };
      const claims = claimsOf(tokens.id_token);
      expect(claims.amr).toEqual(['wia']);
      expect(claims.preferred_username).toBe(carol.name);
      // The record provisioned as at a password sign-in: the directory's user, with its objectGUID.
      const user = await server.ctx.users.find(claims.sub as string);
      expect(user).toMatchObject({ backend: 'corp', username: carol.name, email: `${carol.name}@latchkey.test` });
      const success = await server.sql('audit_events').where({ kind: 'login.success', user_id: user!.id }).first();
      expect(JSON.parse(success.details)).toMatchObject({ amr: ['wia'], principal: `${carol.name}@${AD_REALM}`, backend: 'corp' });
    });

    test('a client with kerberos: false, set through GraphQL, shows its users only the form', async () => {
      const admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'openid admin' })).access_token;
      const other = await server.client();
      const set = await graphqlPost(
        server,
        admin,
        'mutation($id: ID!) { updateClient(clientId: $id, input: { kerberos: false }) { kerberos } }',
        {
          id: other.clientId,
        },
      );
      expect(set.data).toEqual({ updateClient: { kerberos: false } });
      const answer = await krb.curl(carolTickets, authorizeUrl(other));
      expect(answer.status).toBe(200);
      expect(answer.headers['www-authenticate']).toBeUndefined();
      expect(answer.body).toContain('name="password"');
    });

    if (!all) return;

    test('Python requests-kerberos: the same code, with no form', async () => {
      const answer = await krb.python(carolTickets, authorizeUrl(app));
      expect(answer.status).toBe(302);
      expect(new URL(answer.headers.location!).searchParams.get('code')).toBeTruthy();
      expect(answer.headers['www-authenticate']).toMatch(/^Negotiate /);
    });

    test('/account, /device and SAML SSO ask for a ticket and take it', async () => {
      const account = await krb.curl(carolTickets, `${base}/account`);
      expect(account.status).toBe(303);
      expect(account.headers.location).toBe('/account');
      expect(account.headers['set-cookie']).toMatch(/(^|\n)lk_sso=/);

      const device = await server.client({ confidential: false, grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'] });
      const started = (await (
        await postForm(`${base}/oauth/v20/device_authorization`, { client_id: device.clientId, scope: 'openid' })
      ).json()) as {
        user_code: string;
      };
      const approval = await krb.curl(carolTickets, `${base}/device?${new URLSearchParams({ user_code: started.user_code })}`);
      expect(approval.status).toBe(200);
      expect(approval.body).toContain(carol.name);
      expect(approval.body).toContain('name="decision"');

      const entityId = `https://sp-${kind}.example/kerberos`;
      await server.ctx.samlProviders.register(
        null,
        { entityId, name: 'Kerberos SP', assertionConsumerServiceUrls: [`https://sp-${kind}.example/acs`], allowIdpInitiated: true },
        CLI_ACTOR,
      );
      const sso = await krb.curl(carolTickets, `${base}/saml/v20/sso?${new URLSearchParams({ sp: entityId })}`);
      expect(sso.status).toBe(200);
      const xml = Buffer.from(hiddenFields(sso.body).SAMLResponse!, 'base64').toString('utf8');
      expect(/<saml:AuthnContextClassRef>([^<]+)</.exec(xml)?.[1]).toBe(AUTHN_CONTEXT.kerberos);
      expect(AUTHN_CONTEXT.kerberos).toBe('urn:oasis:names:tc:SAML:2.0:ac:classes:Kerberos');
    });

    test('MFA still applies: a client that needs a second factor asks for the code after the ticket', async () => {
      const dave = { name: `kdave${k}`, password: `Kdave-${k}-Pw-123!` };
      const tickets = await userWithTickets(dave.name, dave.password);
      // Dave signs in once (his record is made), then sets up TOTP.
      expect((await krb.curl(tickets, authorizeUrl(app))).status).toBe(302);
      const { id } = (await server.sql('users').where({ username: dave.name }).first()) as { id: string };
      const user = (await server.ctx.users.find(id))!;
      const { secret } = (await server.ctx.mfa.startTotp(user))!;
      expect(await server.ctx.mfa.confirmTotp(user, codeAt(secret, serverNow()))).toBeDefined();

      const strict = await server.client({ requireMfa: true });
      const first = await withToken(authorizeUrl(strict), await krb.token(tickets));
      const page = await first.text();
      expect(first.status).toBe(200);
      expect(page).toContain('name="code"');
      const cookie = first.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      // The next time step: each code is taken once.
      const done = await postForm(
        `${base}/oauth/v20/authorize`,
        { ...hiddenFields(page), code: codeAt(secret, serverNow() + 30_000) },
        { cookie },
      );
      expect(done.status).toBe(303);
      const code = new URL(done.headers.get('location')!).searchParams.get('code')!;
      const tokens = (await (await exchangeCode(server, strict, code)).json()) as { id_token: string };
      expect(claimsOf(tokens.id_token).amr).toEqual(['wia', 'otp', 'mfa']);
    });

    test('refused: NTLM inside Negotiate, alone or wrapped in SPNEGO', async () => {
      await expectRefused(NTLM_NEGOTIATE.toString('base64'), 'ntlm', /NTLM/);
      await expectRefused(spnegoNtlm(), 'ntlm', /NTLM/);
    });

    test('refused: a ticket for another service, and one from another realm', async () => {
      const other = await krb.otherService(`other${k}.latchkey.test`);
      expect(other).not.toBe(SERVICE_PRINCIPAL);
      const wrong = await expectRefused(
        await krb.token(carolTickets, { service: `HTTP@other${k}.latchkey.test` }),
        'wrong_service',
        /not for this site/,
      );
      expect(wrong?.client_id).toBe(app.clientId);
      await expectRefused(otherRealm(await krb.token(carolTickets)), 'wrong_realm', /another domain/);
    });

    test('refused: an expired ticket (issued by the KDC already past its end)', async () => {
      const erin = { name: `kerin${k}`, password: `Kerin-${k}-Pw-123!` };
      await krb.user(erin.name, erin.password);
      // The client's clock 295 s behind (the KDC takes up to 300), a one-second ticket for the service
      // itself: its end, in the KDC's time, is about five minutes ago.
      const tickets = await krb.kinit(erin.name, erin.password, { lifetime: '1s', service: SERVICE_PRINCIPAL, fakeOffset: -295 });
      const end = klistTime(
        (await tickets.list())
          .split('\n')
          .find((l) => l.includes(SERVICE_PRINCIPAL))!
          .split(/\s{2,}/)[1]!,
      );
      // Past its end by more than the five minutes' allowance for clocks (MIT's clockskew).
      await eventually('the ticket to be expired beyond the clock allowance', async () => Date.now() > end + 301_000, {
        withinMs: 30_000,
        everyMs: 250,
      });
      // The client's clock inside the ticket's life (it would not use it otherwise): the server finds it expired.
      const token = await krb.token(tickets, { fakeTime: `@${utc(end - 3000)}` });
      await expectRefused(token, 'expired', /has expired/);
    });

    test('refused: a replayed authenticator (the same Authorization header twice)', async () => {
      const token = await krb.token(carolTickets);
      const first = await withToken(authorizeUrl(app), token);
      expect(first.status).toBe(302);
      await expectRefused(token, 'replay', /used already/);
    });

    test("refused: a client clock more than five minutes off the server's", async () => {
      // The service ticket is cached first: with a wrong clock the KDC would refuse to issue it.
      await krb.token(carolTickets);
      await expectRefused(await krb.token(carolTickets, { fakeTime: '+10m' }), 'clock_skew', /clock is more than five minutes off/);
    });

    test('refused: a principal the directory does not know, and one it disabled', async () => {
      const stranger = await userWithTickets(`kstranger${k}`, `Kstranger-${k}-Pw-1!`, { outside: true });
      const unknown = await expectRefused(await krb.token(stranger), 'unknown_principal', /not known here/);
      expect(unknown?.details).toMatchObject({ principal: `kstranger${k}@${AD_REALM}`, backend: 'corp' });

      const frank = { name: `kfrank${k}`, password: `Kfrank-${k}-Pw-123!` };
      const tickets = await userWithTickets(frank.name, frank.password);
      const token = await krb.token(tickets);
      // Disabled after the ticket was issued: tickets live for hours, the directory is asked every time.
      await dc().asAdmin((c) =>
        c.modify(`CN=${frank.name},OU=Latchkey People,${AD_BASE_DN}`, [
          new Change({ operation: 'replace', modification: new Attribute({ type: 'userAccountControl', values: ['514'] }) }),
        ]),
      );
      const disabled = await expectRefused(token, 'account_refused', /This account is disabled/);
      expect(disabled?.details).toMatchObject({ refusal: 'disabled' });
      expect(disabled?.user_id).toBeTruthy();
    });

    test('refused: a token that is not Kerberos at all; never a 500', async () => {
      await expectRefused('AAAA', 'invalid_token', /Single sign-on did not work/);
      const truncated = (await krb.token(carolTickets)).slice(0, 200);
      await expectRefused(truncated, 'invalid_token', /Single sign-on did not work/);
    });

    test('a Latchkey process of its own (as npm start starts it) sets its keytab and replay cache itself: curl signs in', async () => {
      // Its environment is the one given here, none of the jest process's: the server itself must point
      // the GSSAPI library at the keytab (KRB5_KTNAME) and at a replay cache of its own.
      const folder = mkdtempSync(join(tmpdir(), 'latchkey-kerberos-node-'));
      const port = await freePort();
      const file = join(folder, 'latchkey.config.yaml');
      writeFileSync(file, stringify(ldapChain(adConfig({ kerberos: krb.backendConfig() }))));
      const node = await spawnLatchkey({
        DATABASE_URL: server.db.url,
        LATCHKEY_SECRET: server.ctx.config.secret!,
        LATCHKEY_CONFIG: file,
        PORT: String(port),
        PUBLIC_URL: `http://${KERBEROS_HOST}:${port}`,
      });
      try {
        const url = authorizeUrl(app).replace(base, `http://${KERBEROS_HOST}:${port}`);
        const challenged = await get(url);
        expect([challenged.status, challenged.headers.get('www-authenticate')]).toEqual([401, 'Negotiate']);
        const answer = await krb.curl(carolTickets, url);
        expect(answer.status).toBe(302);
        expect(new URL(answer.headers.location!).searchParams.get('code')).toBeTruthy();
        expect(node.output()).toContain('desktop single sign-on (Kerberos) is on');
      } finally {
        await node.stop();
        rmSync(folder, { recursive: true, force: true });
      }
    });

    test('checked at start: a keytab that cannot be read, or holds no key of the service principal, stops the start', async () => {
      const start = async (kerberos: Record<string, unknown>) =>
        startTestServer(kind, { ...krb.serverAt(await freePort()), ...ldapChain(adConfig({ kerberos: krb.backendConfig(kerberos) })) });
      await expect(start({ keytab: `${krb.keytab}.missing` })).rejects.toThrow(
        /identity backend "corp" \(plugin "ldap"\): invalid config: .*config\.kerberos\.keytab: cannot read the keytab .*ENOENT/,
      );
      await expect(start({ servicePrincipal: `HTTP/elsewhere.latchkey.test@${AD_REALM}` })).rejects.toThrow(
        /config\.kerberos\.keytab: .* holds no key of HTTP\/elsewhere\.latchkey\.test@LATCHKEY\.TEST/,
      );
    });

    test('without a backend with kerberos nothing changes: no challenge, a token is not looked at', async () => {
      const plain = await startTestServer(kind, { ...krb.serverAt(await freePort()), ...ldapChain(adConfig()) });
      try {
        const client = await plain.client();
        const url = `http://${new URL(plain.ctx.config.publicUrl).host}/oauth/v20/authorize?${new URLSearchParams({
          client_id: client.clientId,
          redirect_uri: client.redirectUri,
          response_type: 'code',
        })}`;
        const res = await get(url);
        expect(res.status).toBe(200);
        expect(res.headers.get('www-authenticate')).toBeNull();
        expect((await withToken(url, await krb.token(carolTickets))).status).toBe(200);
        expect(plain.ctx.kerberos.enabled).toBe(false);
        expect((await scrape(`http://127.0.0.1:${new URL(plain.ctx.config.publicUrl).port}`)).map((f) => f.name)).not.toContain(
          'latchkey_kerberos_refused_total',
        );
      } finally {
        await plain.stop();
      }
    });
  });
}
