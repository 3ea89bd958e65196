import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { groupDn, GROUPS, people, personDn } from '../fixtures/ldap/directory.ts';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { sample, scrape } from '../helpers/metrics.ts';
import { SamlBrowser, type Hop } from '../helpers/saml-browser.ts';
import { startSamlSp, type AcsAnswer, type TestSp } from '../helpers/saml-sp.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';

/** The directory group the SP's policy names: bob is in it, alice is not. */
const APP_GROUP = 'payroll-users';

const REGISTER = `mutation Register($xml: String, $input: SamlServiceProviderInput) {
  registerSamlServiceProvider(metadataXml: $xml, input: $input) { entityId name access { mode groups } allowIdpInitiated }
}`;
const DENIALS = `query Denials($userId: ID!) {
  auditEvents(first: 50, kind: "access.denied", userId: $userId) { edges { node { kind userId clientId details } } }
}`;

const certificateOf = (metadata: string) => /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!;
const pem = (b64: string) => `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;

let slapd: Slapd;

beforeAll(async () => {
  slapd = await startSlapd();
  await slapd.add({
    dn: groupDn(APP_GROUP),
    attrs: { objectClass: 'groupOfNames', cn: APP_GROUP, member: [personDn(people.bob), `uid=nobody,${GROUPS}`] },
  });
});
afterAll(async () => {
  await slapd?.destroy();
});

/**
 * docs/access-and-claims.md: a SAML service provider's access policy, SP- and IdP-initiated, against
 * node-saml SPs registered through the admin API: a refused user gets the 403 page and the SP no
 * SAMLResponse, whether they sign in there or come with an SSO session.
 */
describe.each(databaseKinds)('access policies enforced for SAML service providers on %s', (kind) => {
  let server: TestServer;
  let token: string;
  let idpCert: string;
  let payroll: TestSp;
  const name = 'Payroll';

  const denialsOf = async (username: string) => {
    const userId = (await server.ctx.users.findByUsername('corp', username))!.id;
    const answer = await graphqlPost(server, token, DENIALS, { userId });
    expect(answer.errors).toBeUndefined();
    return (answer.data!.auditEvents as { edges: Array<{ node: { clientId: string; details: string } }> }).edges.map((e) => e.node);
  };
  const deniedCount = async () => sample(await scrape(server.url), 'latchkey_access_denied_total', { application: payroll.entityId });

  /** The 403 page naming the SP, and nothing that would post to its ACS. */
  function expectRefusalPage(page: Hop): void {
    expect(page.status).toBe(403);
    expect(page.location).toBeNull();
    expect(page.html).toContain(`You don't have access to <span id="application">${name}</span>`);
    // No `access.contact` here: the administrator alone.
    expect(page.html).toContain('Ask your administrator to give you access.');
    expect(page.html).not.toContain('SAMLResponse');
    expect(htmlForms(page.html)).toHaveLength(0);
  }

  /** The SP's own login link, to Latchkey, up to its first page. */
  const spInitiated = async (browser: SamlBrowser) => browser.follow(await browser.get(`${payroll.url}/login?relay=`));
  const idpInitiated = (browser: SamlBrowser) => browser.get(`${server.url}/saml/v20/sso?sp=${encodeURIComponent(payroll.entityId)}`);
  const signIn = (browser: SamlBrowser, page: Hop, username: 'alice' | 'bob') => {
    expect(page.html).toContain('name="password"');
    return browser.submit(page, { username, password: people[username].password });
  };
  async function atAcs(browser: SamlBrowser, page: Hop): Promise<AcsAnswer> {
    expect(page.status).toBe(200);
    expect(htmlForms(page.html)[0]?.fields.SAMLResponse).toBeDefined();
    return JSON.parse((await browser.submit(page)).html) as AcsAnswer;
  }

  beforeAll(async () => {
    server = await startTestServer(kind, ldapChain(ldapBackendConfig(slapd)));
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const metadata = await (await fetch(`${server.url}/saml/v20/metadata`)).text();
    idpCert = pem(certificateOf(metadata));
    payroll = await startSamlSp({ idpUrl: server.url, idpCert });
    const answer = await graphqlPost(server, token, REGISTER, {
      xml: payroll.metadataXml,
      input: { name, allowIdpInitiated: true, access: { mode: 'ASSIGNED', groups: [APP_GROUP] } },
    });
    expect(answer.errors).toBeUndefined();
    expect(answer.data!.registerSamlServiceProvider).toMatchObject({ access: { mode: 'ASSIGNED', groups: [APP_GROUP] } });
  });
  afterAll(async () => {
    await payroll?.stop();
    await server?.stop();
  });

  test('SP-initiated: a user outside the group gets the 403 page, no SAMLResponse; audited and counted; a member gets in', async () => {
    const before = await deniedCount();
    const alice = new SamlBrowser();
    expectRefusalPage(await signIn(alice, await spInitiated(alice), 'alice'));
    // Signed in now: the next request to the SP is refused straight away, without the login page.
    expectRefusalPage(await spInitiated(alice));
    expect(await deniedCount()).toBe(before + 2);
    const events = await denialsOf('alice');
    expect(events.length).toBeGreaterThanOrEqual(2);
    expect(events[0]!.clientId).toMatch(/^saml:/);
    expect(JSON.parse(events[0]!.details)).toMatchObject({ application: payroll.entityId, kind: 'saml', reason: 'not_assigned' });

    const bob = new SamlBrowser();
    const answer = await atAcs(bob, await signIn(bob, await spInitiated(bob), 'bob'));
    expect(answer.error).toBeUndefined();
    expect(answer.profile!.uid).toBe('bob');
  });

  test('IdP-initiated: the same refusal, signing in there or with an SSO session; a member gets an assertion', async () => {
    const before = await deniedCount();
    const alice = new SamlBrowser();
    expectRefusalPage(await signIn(alice, await idpInitiated(alice), 'alice'));
    expectRefusalPage(await idpInitiated(alice));
    expect(await deniedCount()).toBe(before + 2);

    const bob = new SamlBrowser();
    const answer = await atAcs(bob, await signIn(bob, await idpInitiated(bob), 'bob'));
    expect(answer.error).toBeUndefined();
    expect(answer.profile!.uid).toBe('bob');
  });

  test('a user taken out of the group is refused at the next sign-on, SSO session or not', async () => {
    const bob = new SamlBrowser();
    expect((await atAcs(bob, await signIn(bob, await spInitiated(bob), 'bob'))).ok).toBe(true);
    await slapd.modify(groupDn(APP_GROUP), 'member', [`uid=nobody,${GROUPS}`]);
    try {
      // A new sign-in reads the directory's groups.
      const again = new SamlBrowser();
      expectRefusalPage(await signIn(again, await spInitiated(again), 'bob'));
      // …and the session that sign-in refreshed is refused too.
      expectRefusalPage(await spInitiated(bob));
    } finally {
      await slapd.modify(groupDn(APP_GROUP), 'member', [personDn(people.bob), `uid=nobody,${GROUPS}`]);
    }
  });
});
