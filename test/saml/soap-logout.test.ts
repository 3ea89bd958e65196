import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { startMellon, WebWalker, type Mellon, type WebPage } from '../helpers/mellon.ts';
import { SamlBrowser } from '../helpers/saml-browser.ts';
import { FAULT_WORDS, SoapReceiver } from '../helpers/saml-soap-receiver.ts';
import { startSamlSp, type AcsAnswer, type TestSp } from '../helpers/saml-sp.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/** Short back-off, so a retry comes within the test; a quick poll. */
const FAST = { logout: { backchannelRetryDelays: [300, 300, 300], backchannelPollInterval: 100 } };
const PERSISTENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';

const REGISTER = `mutation Register($xml: String, $input: SamlServiceProviderInput) {
  registerSamlServiceProvider(metadataXml: $xml, input: $input) { entityId singleLogoutServiceUrl singleLogoutSoapUrl }
}`;
const UPDATE = `mutation Update($id: String!, $input: SamlServiceProviderInput!) {
  updateSamlServiceProvider(entityId: $id, input: $input) { singleLogoutSoapUrl }
}`;

const pem = (b64: string) => `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;

/**
 * docs/saml-applications.md "Single logout by SOAP": every end of an SSO session that is not the SAML
 * front-channel chain tells the session's SPs with a SOAP SingleLogoutService, server to server, with
 * a signed LogoutRequest; against Apache mod_auth_mellon (its own session ends) and node-saml SPs
 * whose SOAP endpoint is a small receiver that checks what it gets.
 */
describe.each(databaseKinds)('SAML single logout by SOAP on %s', (kind) => {
  let server: TestServer;
  let mellon: Mellon;
  let receiver: SoapReceiver;
  let token: string;
  let idpCert = '';
  const sps: TestSp[] = [];

  beforeAll(async () => {
    server = await startTestServer(kind, FAST);
    const metadata = await (await fetch(`${server.url}/saml/v20/metadata`)).text();
    idpCert = pem(/<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!);
    receiver = await SoapReceiver.start(() => idpCert);
    mellon = await startMellon({ idpMetadataXml: metadata });
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const registered = await graphqlPost(server, token, REGISTER, { xml: mellon.metadataXml });
    expect(registered.errors).toBeUndefined();
  });
  afterAll(async () => {
    for (const s of sps) await s.stop();
    await mellon?.stop();
    await receiver?.close();
    await server?.stop();
  });

  const audited = async (kind: string, userId: string) =>
    (await server.sql('audit_events').where({ kind, user_id: userId })).map((r) => ({
      clientId: String(r.client_id),
      details: JSON.parse(String(r.details)) as Record<string, unknown>,
    }));
  const admin = (query: string, variables: Record<string, unknown>) => graphqlPost(server, token, query, variables);

  /** Signs `username` in at mellon's protected page through Latchkey; mellon then serves it from its own session. */
  async function signedInAtMellon(username: string): Promise<WebWalker> {
    const web = new WebWalker();
    const login = await web.open(`${mellon.url}/secret/`);
    expect(login.html).toContain('name="password"');
    const secret = await web.submit(await web.submit(login, { username, password: `${username}-password-1` }));
    if (secret.url !== `${mellon.url}/secret/`) throw new Error(`mellon did not let ${username} in: ${mellonSays(secret)}`);
    const before = web.visited.length;
    expect((await web.open(`${mellon.url}/secret/`)).html).toContain(`MELLON_uid=${username}`);
    expect(web.visited.slice(before).every((u) => u.startsWith(mellon.url))).toBe(true);
    return web;
  }
  const mellonSays = (page: WebPage) => `${page.status} at ${page.url}\n${page.html.slice(0, 600)}\n${mellon.errorLog()}`;

  /** After the SOAP request, mellon's session is gone: the protected page sends the browser to the IdP, whose session is gone too. */
  async function mellonForgot(web: WebWalker): Promise<void> {
    const before = web.visited.length;
    const page = await web.open(`${mellon.url}/secret/`);
    expect(web.visited.slice(before).some((u) => u.startsWith(`${server.url}/saml/v20/sso?`))).toBe(true);
    if (!page.html.includes('name="password"')) throw new Error(`mellon still served the page: ${mellonSays(page)}`);
  }

  async function deliveredToMellon(userId: string): Promise<void> {
    await eventually('the SOAP LogoutRequest reached mellon and is audited', async () =>
      (await audited('logout.saml_soap_delivered', userId)).some((e) => e.details.entityId === mellon.entityId),
    );
    const [event] = await audited('logout.saml_soap_delivered', userId);
    expect(event!.details).toMatchObject({ entityId: mellon.entityId, attempts: 1 });
    expect(await audited('logout.saml_soap_failed', userId)).toEqual([]);
  }

  /** A node-saml SP, registered from its metadata with `input` over it. */
  async function nodeSp(input: Record<string, unknown>): Promise<TestSp> {
    const made = await startSamlSp({ idpUrl: server.url, idpCert, signRequests: true });
    sps.push(made);
    const answer = await admin(REGISTER, { xml: made.metadataXml, input });
    expect(answer.errors).toBeUndefined();
    return made;
  }

  async function signOn(browser: SamlBrowser, sp: TestSp, username: string): Promise<AcsAnswer> {
    let page = await browser.follow(await browser.get(`${sp.url}/login`));
    if (/name="password"/.test(page.html)) page = await browser.submit(page, { username, password: `${username}-password-1` });
    expect(htmlForms(page.html)[0]?.fields.SAMLResponse).toBeDefined();
    const answer = JSON.parse((await browser.submit(page)).html) as AcsAnswer;
    expect(answer.ok).toBe(true);
    return answer;
  }

  const revokeTokens = (userId: string) => admin('mutation($u: ID) { revokeTokens(userId: $u) }', { u: userId });

  test("mellon's metadata offers a SOAP SingleLogoutService: registration takes it, GraphQL shows it and checks a new one", async () => {
    const sp = await admin('query($id: String!) { samlServiceProvider(entityId: $id) { singleLogoutServiceUrl singleLogoutSoapUrl } }', {
      id: mellon.entityId,
    });
    expect(sp.data).toEqual({
      samlServiceProvider: { singleLogoutServiceUrl: `${mellon.url}/mellon/logout`, singleLogoutSoapUrl: `${mellon.url}/mellon/logout` },
    });
    const other = await nodeSp({});
    for (const bad of ['ftp://sp.example.com/soap', 'http://169.254.169.254/soap', 'https://sp.example.com/soap#x', 'soap']) {
      const refused = await admin(UPDATE, { id: other.entityId, input: { singleLogoutSoapUrl: bad } });
      expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(refused.errors?.[0]?.message).toContain('singleLogoutSoapUrl');
    }
    const set = await admin(UPDATE, { id: other.entityId, input: { singleLogoutSoapUrl: 'https://sp.example.com/saml/soap' } });
    expect(set.data).toEqual({ updateSamlServiceProvider: { singleLogoutSoapUrl: 'https://sp.example.com/saml/soap' } });
    const cleared = await admin(UPDATE, { id: other.entityId, input: { singleLogoutSoapUrl: null } });
    expect(cleared.data).toEqual({ updateSamlServiceProvider: { singleLogoutSoapUrl: null } });
  });

  test("an administrator's revokeTokens ends mellon's own session by SOAP: the protected page asks to sign in again", async () => {
    const userId = await server.user('rita', 'rita-password-1');
    const web = await signedInAtMellon('rita');
    expect((await revokeTokens(userId)).errors).toBeUndefined();
    await deliveredToMellon(userId);
    await mellonForgot(web);
  });

  test('disabling the user tells mellon too', async () => {
    const userId = await server.user('dina', 'dina-password-1');
    const web = await signedInAtMellon('dina');
    const answer = await admin('mutation($id: ID!) { updateUser(id: $id, input: { disabled: true }) { disabled } }', { id: userId });
    expect(answer.errors).toBeUndefined();
    await deliveredToMellon(userId);
    const page = await web.open(`${mellon.url}/secret/`);
    expect(page.html).not.toContain('MELLON_uid=dina');
  });

  test('OIDC RP-initiated logout of the same SSO session tells mellon', async () => {
    const userId = await server.user('otto', 'otto-password-1');
    const web = await signedInAtMellon('otto');
    // An OIDC client signed in through the same SSO session (its redirect URI a page of mellon's site).
    const client = await server.client({ scopes: ['openid'], redirectUris: [`${mellon.url}/signed-out.html`] });
    const callback = await web.open(
      `${server.url}/oauth/v20/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code', scope: 'openid', state: 's' })}`,
    );
    const code = new URL(callback.url).searchParams.get('code');
    expect(code).toBeTruthy();
    const { id_token } = (await (await exchangeCode(server, client, code!)).json()) as { id_token: string };
    const out = await web.open(`${server.url}/connect/v10/logout?${new URLSearchParams({ id_token_hint: id_token })}`);
    expect(out.status).toBe(200);
    await deliveredToMellon(userId);
    await mellonForgot(web);
  });

  test('a directory leaver (users.deprovision) loses the mellon session', async () => {
    const userId = await server.user('lea', 'lea-password-1');
    const web = await signedInAtMellon('lea');
    expect(await server.ctx.users.deprovision(userId, { backend: 'local', reason: 'disabled' })).toBe(true);
    await deliveredToMellon(userId);
    const page = await web.open(`${mellon.url}/secret/`);
    expect(page.html).not.toContain('MELLON_uid=lea');
    expect(web.visited.at(-1)!.startsWith(server.url)).toBe(true);
  });

  test('the LogoutRequest: SOAP 1.1, signed by the IdP key, naming the NameID and SessionIndex of the assertion', async () => {
    const userId = await server.user('sid', 'sid-password-1');
    const sp = await nodeSp({ singleLogoutSoapUrl: receiver.url('sid') });
    const { profile } = await signOn(new SamlBrowser(), sp, 'sid');
    expect((await revokeTokens(userId)).errors).toBeUndefined();
    await eventually('the SP got its LogoutRequest', async () => receiver.to('sid').length === 1);
    const [got] = receiver.to('sid');
    expect(got).toMatchObject({
      contentType: 'text/xml; charset=utf-8',
      soapAction: '"http://www.oasis-open.org/committees/security"',
      issuer: `${server.url}/saml/v20/metadata`,
      destination: receiver.url('sid'),
      nameId: profile!.nameID,
      nameIdFormat: PERSISTENT,
      sessionIndex: profile!.sessionIndex,
      signatureValid: true,
    });
    const notOnOrAfter = Date.parse(got!.notOnOrAfter);
    expect(notOnOrAfter).toBeGreaterThan(Date.now());
    expect(notOnOrAfter).toBeLessThanOrEqual(Date.now() + 5 * 60_000);
    await eventually('the delivery is audited', async () => (await audited('logout.saml_soap_delivered', userId)).length === 1);
    expect(await server.sql('saml_logouts')).toEqual([]);
  });

  test('an SP that answers a SOAP fault (HTTP 500) first is retried and then delivered', async () => {
    const userId = await server.user('ray', 'ray-password-1');
    receiver.modes.set('ray', 'fault-once');
    const sp = await nodeSp({ singleLogoutSoapUrl: receiver.url('ray') });
    await signOn(new SamlBrowser(), sp, 'ray');
    expect((await revokeTokens(userId)).errors).toBeUndefined();
    await eventually('delivered on the second try', async () => (await audited('logout.saml_soap_delivered', userId)).length === 1);
    expect(receiver.to('ray')).toHaveLength(2);
    expect((await audited('logout.saml_soap_delivered', userId))[0]!.details).toMatchObject({ entityId: sp.entityId, attempts: 2 });
    // A new request each try, the same user and session.
    const [first, second] = receiver.to('ray');
    expect(second!.id).not.toBe(first!.id);
    expect(second!.sessionIndex).toBe(first!.sessionIndex);
  });

  test('an SP that always fails: given up after the retries, audited with a fixed reason, never its words', async () => {
    const userId = await server.user('fay', 'fay-password-1');
    receiver.modes.set('fay', 'fault');
    const sp = await nodeSp({ singleLogoutSoapUrl: receiver.url('fay') });
    await signOn(new SamlBrowser(), sp, 'fay');
    expect((await revokeTokens(userId)).errors).toBeUndefined();
    await eventually('given up', async () => (await audited('logout.saml_soap_failed', userId)).length === 1);
    const [failed] = await audited('logout.saml_soap_failed', userId);
    expect(failed!.details).toMatchObject({ entityId: sp.entityId, attempts: 4, error: 'SOAP fault' });
    expect(JSON.stringify(failed)).not.toContain(FAULT_WORDS);
    expect(receiver.to('fay')).toHaveLength(4);
    expect(await server.sql('saml_logouts')).toEqual([]);
  });

  test('an SP without a SOAP URL is not called; the one with a URL in the same session is', async () => {
    const userId = await server.user('nia', 'nia-password-1');
    const silent = await nodeSp({});
    const told = await nodeSp({ singleLogoutSoapUrl: receiver.url('nia') });
    const browser = new SamlBrowser();
    await signOn(browser, silent, 'nia');
    await signOn(browser, told, 'nia');
    expect((await revokeTokens(userId)).errors).toBeUndefined();
    await eventually('the SP with a SOAP URL is told', async () => (await audited('logout.saml_soap_delivered', userId)).length === 1);
    expect((await audited('logout.saml_soap_delivered', userId))[0]!.details.entityId).toBe(told.entityId);
    expect(receiver.to('nia')).toHaveLength(1);
    expect(await audited('logout.saml_soap_failed', userId)).toEqual([]);
    // The session's participants went with it: nothing is left to tell anyone later.
    expect(
      await server
        .sql('saml_session_participants')
        .whereIn('sp_id', server.sql('saml_service_providers').select('id').where({ entity_id: silent.entityId })),
    ).toEqual([]);
  });

  test('front-channel logout: SPs told by redirect and the SP that asked get no SOAP request; an SP with SOAP only does', async () => {
    const userId = await server.user('fern', 'fern-password-1');
    const first = await startSamlSp({ idpUrl: server.url, idpCert, signRequests: true });
    const second = await startSamlSp({ idpUrl: server.url, idpCert, signRequests: true });
    sps.push(first, second);
    for (const [sp, name] of [
      [first, 'fern-first'],
      [second, 'fern-second'],
    ] as const) {
      const answer = await admin(REGISTER, {
        xml: sp.metadataXml,
        input: { singleLogoutServiceUrl: sp.sloUrl, singleLogoutSoapUrl: receiver.url(name) },
      });
      expect(answer.errors).toBeUndefined();
    }
    const soapOnly = await nodeSp({ singleLogoutSoapUrl: receiver.url('fern-soap') });
    const browser = new SamlBrowser();
    for (const sp of [first, second, soapOnly]) await signOn(browser, sp, 'fern');

    const visited: string[] = [];
    const end = await browser.follow(await browser.get(`${first.url}/logout?relay=bye`), visited);
    expect(visited.map((u) => new URL(u).origin + new URL(u).pathname)).toEqual([
      `${server.url}/saml/v20/slo`,
      second.sloUrl,
      `${server.url}/saml/v20/slo`,
      first.sloUrl,
    ]);
    expect(JSON.parse(end.html)).toMatchObject({ ok: true, loggedOut: true });

    await eventually('the SOAP-only SP is told', async () => receiver.to('fern-soap').length === 1);
    await eventually('its delivery is audited', async () => (await audited('logout.saml_soap_delivered', userId)).length === 1);
    expect(await server.sql('saml_logouts')).toEqual([]);
    expect(receiver.to('fern-first')).toEqual([]);
    expect(receiver.to('fern-second')).toEqual([]);
  });
});
