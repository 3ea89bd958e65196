import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { advanceClock, resetClock, serverNow } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { CookieJar, get, hiddenFields, postForm, type Fields } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { SoftAuthenticator } from '../helpers/soft-authenticator.ts';

/**
 * docs/decisions.md, "Passkeys", over real HTTP with a software passkey whose counter stays 0 (as a synced
 * passkey's does): each challenge is used once, a passkey signs in alone only with user
 * verification, and a credential registered twice is the user's mistake (400), not a server error.
 * PUBLIC_URL is at `localhost` (passkeys are off at an IP address); requests go to 127.0.0.1.
 */
describe.each(databaseKinds)('passkey challenges on %s', (kind) => {
  let server: TestServer;
  let origin: string;

  /** A browser of its own: cookies, the page's CSRF token, and the forms the page's script posts. */
  function browser() {
    const jar = new CookieJar();
    let csrf = '';
    const post = async (path: string, fields: Fields) => {
      const r = await postForm(`${server.url}${path}`, { csrf_token: csrf, ...fields }, { cookie: jar.header() });
      jar.store(r);
      return { status: r.status, location: r.headers.get('location'), text: await r.text() };
    };
    return {
      async open(path = '/account'): Promise<string> {
        const r = await get(`${server.url}${path}`, {}, { cookie: jar.header() });
        jar.store(r);
        const html = await r.text();
        csrf = hiddenFields(html).csrf_token ?? csrf;
        return html;
      },
      post,
      async options<T>(fields: Fields): Promise<{ options: T; state: string }> {
        const r = await post('/passkey/options', fields);
        expect(r.status).toBe(200);
        return JSON.parse(r.text) as { options: T; state: string };
      },
      /** The login form's password step: a session (303), or the second step's page with `pending`. */
      async password(username: string, password: string) {
        await this.open();
        return post('/account', { _action: 'login', username, password });
      },
    };
  }

  /** A user signed in by password who registers `key` at the account page: the browser, and the form it posted. */
  async function withPasskey(username: string, key: SoftAuthenticator) {
    await server.user(username, `${username}-password-1`);
    const b = browser();
    expect((await b.password(username, `${username}-password-1`)).status).toBe(303);
    await b.open();
    const { options, state } = await b.options<PublicKeyCredentialCreationOptionsJSON>({ purpose: 'register' });
    const registration = {
      _action: 'add_passkey',
      name: 'Soft key',
      webauthn_state: state,
      webauthn_response: JSON.stringify(key.register(options)),
    };
    expect((await b.post('/account', registration)).status).toBe(200);
    return { b, registration };
  }

  /** The login page's "Sign in with a passkey" in a fresh browser: the options, and the form with the answer. */
  async function passwordless(key: SoftAuthenticator, o: { userVerified?: boolean } = {}) {
    const b = browser();
    await b.open();
    const { options, state } = await b.options<PublicKeyCredentialRequestOptionsJSON>({ purpose: 'login' });
    return { options, form: { _action: 'passkey', webauthn_state: state, webauthn_response: JSON.stringify(key.assert(options, o)) } };
  }

  /** `fields` posted from a browser that has never seen them (fresh cookies and CSRF token). */
  async function submitFresh(fields: Fields) {
    const b = browser();
    await b.open();
    return b.post('/account', fields);
  }

  const errorsLogged = () => server.logs.filter((l) => (JSON.parse(l) as { level: number }).level >= 50 || l.includes('"stack"'));

  beforeAll(async () => {
    const port = await freePort();
    origin = `http://localhost:${port}`;
    server = await startTestServer(kind, { port, publicUrl: origin });
  });
  afterAll(() => server.stop());

  test('a captured assertion sent again, from another browser, is refused although the counter stays 0', async () => {
    const key = new SoftAuthenticator(origin);
    await withPasskey('alice', key);
    const { form: captured } = await passwordless(key);
    const first = await submitFresh(captured);
    expect([first.status, first.location]).toEqual([303, '/account']);

    const replayed = await submitFresh(captured);
    expect(replayed.status).toBe(401);
    expect(replayed.text).toContain('The passkey was not accepted.');
    expect(Number((await server.sql('passkeys').where({ credential_id: key.id }).first()).counter)).toBe(0);
  });

  test('one assertion sent twice at the same moment signs in once', async () => {
    const key = new SoftAuthenticator(origin);
    await withPasskey('amir', key);
    const { form: captured } = await passwordless(key);
    const answers = await Promise.all([submitFresh(captured), submitFresh(captured)]);
    expect(answers.map((a) => a.status).sort()).toEqual([303, 401]);
  });

  test('a passkey without user verification does not sign in alone, but serves as the second step after a password', async () => {
    const key = new SoftAuthenticator(origin);
    await withPasskey('bob', key);

    const unverified = await passwordless(key, { userVerified: false });
    const alone = await submitFresh(unverified.form);
    expect(alone.status).toBe(401);
    expect(alone.text).toContain('The passkey was not accepted.');
    // The browser is asked to verify the user, but the server checks the flag whatever it was asked.
    expect(unverified.options.userVerification).toBe('required');

    const b = browser();
    const step = await b.password('bob', 'bob-password-1');
    expect(step.text).toContain('Confirm it is you');
    const pending = hiddenFields(step.text).pending!;
    const { options, state } = await b.options<PublicKeyCredentialRequestOptionsJSON>({ purpose: 'login', pending });
    expect(options.allowCredentials?.map((c) => c.id)).toEqual([key.id]);
    const second = await b.post('/account', {
      _action: 'passkey',
      pending,
      webauthn_state: state,
      webauthn_response: JSON.stringify(key.assert(options, { userVerified: false })),
    });
    expect([second.status, second.location]).toEqual([303, '/account']);
    const session = await server
      .sql('sso_sessions')
      .where({ user_id: (await server.sql('users').where({ username: 'bob' }).first()).id })
      .orderBy('created_at', 'desc')
      .first();
    expect(JSON.parse(String(session.amr))).toEqual(['pwd', 'hwk', 'mfa']);
  });

  test("a passkey as the second step of a SAML sign-on and of /device: the options list the user's passkey", async () => {
    const key = new SoftAuthenticator(origin);
    await withPasskey('gina', key);
    const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD);
    const entityId = `https://sp-${kind}.example/metadata`;
    const registered = await graphqlPost(
      server,
      access_token,
      'mutation R($input: SamlServiceProviderInput) { registerSamlServiceProvider(input: $input) { entityId } }',
      {
        input: { entityId, assertionConsumerServiceUrls: ['https://sp.example/acs'], allowIdpInitiated: true },
      },
    );
    expect(registered.errors).toBeUndefined();
    const cli = await server.client({
      confidential: false,
      grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
      redirectUris: [],
      scopes: ['openid'],
    });
    const device = (await (
      await postForm(`${server.url}/oauth/v20/device_authorization`, { client_id: cli.clientId, scope: 'openid' })
    ).json()) as { user_code: string };

    // Each flow's forms carry no OAuth client_id (SAML: its sealed request; /device: the code).
    const flows = [
      `/saml/v20/sso?${new URLSearchParams({ sp: entityId })}`,
      `/device?${new URLSearchParams({ user_code: device.user_code })}`,
    ];
    for (const path of flows) {
      const b = browser();
      const login = await b.open(path);
      const step = await b.post(path.split('?')[0]!, {
        ...hiddenFields(login),
        _action: 'login',
        username: 'gina',
        password: 'gina-password-1',
      });
      expect(step.status).toBe(200);
      expect(step.text).toContain('Confirm it is you');
      const { options } = await b.options<PublicKeyCredentialRequestOptionsJSON>({
        purpose: 'login',
        pending: hiddenFields(step.text).pending!,
      });
      expect(options.allowCredentials?.map((c) => c.id)).toEqual([key.id]);
    }
  });

  test('registering a credential id that exists, or sending a registration again, is a 400 with a message', async () => {
    const key = new SoftAuthenticator(origin);
    const { b, registration } = await withPasskey('carol', key);
    const already = 'This passkey is already registered.';

    // The registration that added it, sent again.
    const replayed = await b.post('/account', registration);
    expect([replayed.status, replayed.text.includes(already)]).toEqual([400, true]);

    // A new ceremony with the same credential (an authenticator that ignores excludeCredentials).
    await b.open();
    const { options, state } = await b.options<PublicKeyCredentialCreationOptionsJSON>({ purpose: 'register' });
    const again = await b.post('/account', {
      _action: 'add_passkey',
      name: 'Again',
      webauthn_state: state,
      webauthn_response: JSON.stringify(key.register(options)),
    });
    expect([again.status, again.text.includes(already)]).toEqual([400, true]);

    // Another user with the same credential id.
    const { b: other } = await withPasskey('dave', new SoftAuthenticator(origin));
    await other.open();
    const theirs = await other.options<PublicKeyCredentialCreationOptionsJSON>({ purpose: 'register' });
    const stolen = await other.post('/account', {
      _action: 'add_passkey',
      name: 'Not mine',
      webauthn_state: theirs.state,
      webauthn_response: JSON.stringify(key.register(theirs.options)),
    });
    expect([stolen.status, stolen.text.includes(already)]).toEqual([400, true]);

    expect(
      await server
        .sql('passkeys')
        .where({ credential_id: key.id })
        .count({ n: '*' })
        .then((r) => Number(r[0]!.n)),
    ).toBe(1);
    expect(errorsLogged()).toEqual([]);
  });

  test('two registrations of one new credential at the same moment: one is added, the other told why', async () => {
    const { b } = await withPasskey('erin', new SoftAuthenticator(origin));
    const key = new SoftAuthenticator(origin);
    await b.open();
    const [one, two] = [
      await b.options<PublicKeyCredentialCreationOptionsJSON>({ purpose: 'register' }),
      await b.options<PublicKeyCredentialCreationOptionsJSON>({ purpose: 'register' }),
    ];
    const answers = await Promise.all(
      [one, two].map((o) =>
        b.post('/account', {
          _action: 'add_passkey',
          name: 'Twice',
          webauthn_state: o.state,
          webauthn_response: JSON.stringify(key.register(o.options)),
        }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    expect(answers.find((a) => a.status === 400)!.text).toContain('This passkey is already registered.');
    expect(errorsLogged()).toEqual([]);
  });

  test('an expired challenge is refused, and the retention purge deletes it', async () => {
    const key = new SoftAuthenticator(origin);
    await withPasskey('frank', key);
    const { form: late } = await passwordless(key);
    try {
      advanceClock(5 * 60_000 + 1000);
      expect((await submitFresh(late)).status).toBe(401);
      const purged = await server.ctx.retention.purgeNow();
      expect((purged as Record<string, number>).webauthn_challenges).toBeGreaterThan(0);
      expect(
        await server
          .sql('webauthn_challenges')
          .where('expires_at', '<', serverNow())
          .count({ n: '*' })
          .then((r) => Number(r[0]!.n)),
      ).toBe(0);
    } finally {
      resetClock();
    }
  });
});
