import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { DOMParser } from '@xmldom/xmldom';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { attributesOf, startMellon, WebWalker } from '../helpers/mellon.ts';
import { SamlBrowser, type Hop } from '../helpers/saml-browser.ts';
import { startSamlSp, type AcsAnswer, type SpOptions, type TestSp } from '../helpers/saml-sp.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

const SAML_NS = 'urn:oasis:names:tc:SAML:2.0:assertion';
const TRANSIENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient';
const UNSPECIFIED = 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified';
const URI_FORMAT = 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri';
const BASIC_FORMAT = 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic';
const AWS_ROLE = 'https://aws.amazon.com/SAML/Attributes/Role';
const AWS_SESSION_NAME = 'https://aws.amazon.com/SAML/Attributes/RoleSessionName';

/** The example of docs/access-and-claims.md: AWS roles from groups `aws-<account>-<role>`, the session named by the username. */
const AWS_MAPPINGS = [
  {
    name: AWS_ROLE,
    source: 'GROUPS',
    groupFilter: '^aws-(\\d{12})-(\\w+)$',
    value: 'arn:aws:iam::$1:role/$2,arn:aws:iam::$1:saml-provider/Latchkey',
    multiValued: true,
  },
  { name: AWS_SESSION_NAME, source: 'USERNAME' },
];
const AWS_ROLES = [
  'arn:aws:iam::123456789012:role/Admin,arn:aws:iam::123456789012:saml-provider/Latchkey',
  'arn:aws:iam::210987654321:role/ReadOnly,arn:aws:iam::210987654321:saml-provider/Latchkey',
];

const REGISTER = `mutation($xml: String, $input: SamlServiceProviderInput) {
  registerSamlServiceProvider(metadataXml: $xml, input: $input) { entityId nameIdFormat }
}`;

/** One attribute of an assertion as its XML says it. */
interface XmlAttribute {
  nameFormat: string | null;
  friendlyName: string | null;
  values: string[];
}

/** The NameID and the attributes of the (unencrypted) assertion in a Response, straight from its XML. */
function assertionOf(responseXml: string): { nameId: string; nameIdFormat: string | null; attributes: Map<string, XmlAttribute> } {
  const doc = new DOMParser().parseFromString(responseXml, 'text/xml');
  const nameId = doc.getElementsByTagNameNS(SAML_NS, 'NameID')[0]!;
  const attributes = new Map<string, XmlAttribute>();
  const list = doc.getElementsByTagNameNS(SAML_NS, 'Attribute');
  for (let i = 0; i < list.length; i++) {
    const a = list[i]!;
    const values = a.getElementsByTagNameNS(SAML_NS, 'AttributeValue');
    attributes.set(a.getAttribute('Name')!, {
      nameFormat: a.getAttribute('NameFormat'),
      friendlyName: a.hasAttribute('FriendlyName') ? a.getAttribute('FriendlyName') : null,
      values: Array.from({ length: values.length }, (_, j) => values[j]!.textContent ?? ''),
    });
  }
  return { nameId: nameId.textContent ?? '', nameIdFormat: nameId.getAttribute('Format'), attributes };
}

/**
 * docs/access-and-claims.md "Claims and attributes per application", as SAML service providers read it:
 * node-saml (passport-saml's core) and Apache mod_auth_mellon, each registered through GraphQL.
 */
describe.each(databaseKinds)('what each SAML service provider is told on %s', (kind) => {
  let server: TestServer;
  let admin: string;
  let idpCert: string;
  const sps: TestSp[] = [];

  async function gql(query: string, variables?: Record<string, unknown>): Promise<Record<string, unknown>> {
    const answer = await graphqlPost(server, admin, query, variables);
    if (answer.errors) throw new Error(`${query}: ${JSON.stringify(answer.errors)}`);
    return answer.data!;
  }

  /** A node-saml SP registered from its own metadata, with `input` over it. */
  async function sp(options: Omit<SpOptions, 'idpUrl' | 'idpCert'>, input: Record<string, unknown>): Promise<TestSp> {
    const made = await startSamlSp({ idpUrl: server.url, idpCert, ...options });
    sps.push(made);
    await gql(REGISTER, { xml: made.metadataXml, input: { singleLogoutServiceUrl: made.sloUrl, ...input } });
    return made;
  }

  /**
   * A sign-on at `target` (the password when Latchkey asks for it), posted on to its ACS: the Response
   * as it travelled and what node-saml made of it.
   */
  async function signOn(browser: SamlBrowser, target: TestSp, user = 'ines'): Promise<{ xml: string; acs: AcsAnswer }> {
    let page: Hop = await browser.follow(await browser.get(`${target.url}/login`));
    if (/name="password"/.test(page.html)) page = await browser.submit(page, { username: user, password: `${user}-password-1` });
    const response = htmlForms(page.html)[0]?.fields.SAMLResponse;
    if (page.status !== 200 || !response) throw new Error(`expected the form-post page, got ${page.status}: ${page.html.slice(0, 600)}`);
    const acs = JSON.parse((await browser.submit(page)).html) as AcsAnswer;
    if (!acs.ok) throw new Error(`node-saml refused the Response: ${acs.error}`);
    return { xml: Buffer.from(response, 'base64').toString('utf8'), acs };
  }

  beforeAll(async () => {
    server = await startTestServer(kind);
    admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const metadata = await (await fetch(`${server.url}/saml/v20/metadata`)).text();
    const b64 = /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!;
    idpCert = `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
    const create = `mutation($i: CreateUserInput!) { createUser(input: $i) { id } }`;
    await gql(create, {
      i: {
        username: 'ines',
        password: 'ines-password-1',
        email: 'ines@example.org',
        displayName: 'Ines',
        // The last is no AWS group: its account is not 12 digits.
        groups: ['aws-123456789012-Admin', 'aws-210987654321-ReadOnly', 'staff', 'aws-12345-Short'],
        attributes: { employeeNumber: 'E-1001', badges: ['b-1', 'b-2'] },
      },
    });
    await gql(create, { i: { username: 'jon', password: 'jon-password-1', groups: ['staff'] } });
  });
  afterAll(async () => {
    for (const s of sps) await s.stop();
    await server?.stop();
  });

  test('the AWS example: a multi-valued Role attribute with both ARN pairs, the session name, and nothing of the fixed set', async () => {
    const aws = await sp({ identifierFormat: TRANSIENT }, { nameIdFormat: 'TRANSIENT', attributeMappings: AWS_MAPPINGS });
    const { xml, acs } = await signOn(new SamlBrowser(), aws);
    const sent = assertionOf(xml);
    expect(sent.attributes.get(AWS_ROLE)).toEqual({ nameFormat: URI_FORMAT, friendlyName: null, values: AWS_ROLES });
    expect(sent.attributes.get(AWS_SESSION_NAME)).toEqual({ nameFormat: URI_FORMAT, friendlyName: null, values: ['ines'] });
    expect([...sent.attributes.keys()]).toEqual([AWS_ROLE, AWS_SESSION_NAME]);
    // node-saml validated the signed assertion and reads the same.
    expect(acs.profile!.attributes).toEqual({ [AWS_ROLE]: AWS_ROLES, [AWS_SESSION_NAME]: 'ines' });
  });

  test('a TRANSIENT NameID is new at every sign-on, and single logout still finds the session by the last one', async () => {
    const target = await sp({ identifierFormat: TRANSIENT }, { nameIdFormat: 'TRANSIENT' });
    const other = await signOn(new SamlBrowser(), target);
    const browser = new SamlBrowser();
    const first = await signOn(browser, target);
    // The same SSO session, a second assertion: another NameID.
    const second = await signOn(browser, target);
    const ids = [first, second, other].map((s) => s.acs.profile!.nameID);
    for (const s of [first, second, other]) expect(s.acs.profile!.nameIDFormat).toBe(TRANSIENT);
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).not.toMatch(/ines/);
    // The fixed attribute set, as the SP has no mappings.
    expect(first.acs.profile!.attributes).toMatchObject({ uid: 'ines', mail: 'ines@example.org' });

    // The SP's (unsigned: it has no certificate) LogoutRequest names the NameID it was given last
    // (node-saml's /logout uses the last profile it validated: the second).
    const ended = await browser.follow(await browser.get(`${target.url}/logout?relay=bye`));
    expect(JSON.parse(ended.html)).toMatchObject({ ok: true, loggedOut: true });
    const again = await browser.follow(await browser.get(`${target.url}/login`));
    expect(again.html).toContain('name="password"');
  });

  test('without mappings: the fixed set plus the roles of this SP under its roles attribute; an UNSPECIFIED NameID from an attribute', async () => {
    const hr = await sp(
      { identifierFormat: UNSPECIFIED },
      {
        nameIdFormat: 'UNSPECIFIED',
        nameIdAttribute: 'employeeNumber',
        attributes: ['uid', 'groups'],
        roles: [
          { name: 'approver', groups: ['staff'] },
          { name: 'aws-admin', groups: ['aws-123456789012-Admin'] },
          { name: 'ghost', groups: ['nobody'] },
        ],
        rolesAttribute: 'memberOf',
      },
    );
    const ines = await signOn(new SamlBrowser(), hr);
    expect(ines.acs.profile!.nameID).toBe('E-1001');
    expect(ines.acs.profile!.nameIDFormat).toBe(UNSPECIFIED);
    const sent = assertionOf(ines.xml);
    expect([...sent.attributes.keys()]).toEqual(['uid', 'groups', 'memberOf']);
    expect(sent.attributes.get('memberOf')).toEqual({ nameFormat: BASIC_FORMAT, friendlyName: null, values: ['approver', 'aws-admin'] });
    // A user without the attribute: their Latchkey id, never a name another user's attribute could hold.
    const jon = await signOn(new SamlBrowser(), hr, 'jon');
    expect(jon.acs.profile!.nameID).toBe((await server.ctx.users.findByUsername('local', 'jon'))!.id);
    expect(jon.acs.profile!.attributes).toMatchObject({ uid: 'jon', memberOf: 'approver' });

    // Another SP's roles are its own; the attribute's name defaults to `roles`.
    const wiki = await sp({}, { roles: [{ name: 'reader', groups: ['staff'] }] });
    const atWiki = assertionOf((await signOn(new SamlBrowser(), wiki)).xml);
    expect(atWiki.attributes.get('roles')?.values).toEqual(['reader']);
    expect(atWiki.attributes.has('memberOf')).toBe(false);
    expect([...atWiki.attributes.keys()]).toEqual(['uid', 'mail', 'displayName', 'groups', 'roles']);
  });

  test('mappings choose each NameFormat and FriendlyName; a single-valued one carries the first value, one without a value is left out', async () => {
    const mapped = await sp(
      {},
      {
        roles: [{ name: 'approver', groups: ['staff'] }],
        attributeMappings: [
          { name: 'urn:oid:0.9.2342.19200300.100.1.3', friendlyName: 'mail', source: 'EMAIL' },
          { name: 'role', nameFormat: 'BASIC', source: 'ROLES' },
          { name: 'badges', nameFormat: 'UNSPECIFIED', source: 'ATTRIBUTE', attribute: 'badges', multiValued: true },
          { name: 'firstBadge', nameFormat: 'BASIC', source: 'ATTRIBUTE', attribute: 'badges', multiValued: false },
          { name: 'tenant', nameFormat: 'BASIC', source: 'STATIC', value: 'acme' },
          { name: 'missing', nameFormat: 'BASIC', source: 'ATTRIBUTE', attribute: 'nothing' },
        ],
      },
    );
    const sent = assertionOf((await signOn(new SamlBrowser(), mapped)).xml);
    expect(Object.fromEntries(sent.attributes)).toEqual({
      'urn:oid:0.9.2342.19200300.100.1.3': { nameFormat: URI_FORMAT, friendlyName: 'mail', values: ['ines@example.org'] },
      role: { nameFormat: BASIC_FORMAT, friendlyName: null, values: ['approver'] },
      badges: { nameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:unspecified', friendlyName: null, values: ['b-1', 'b-2'] },
      firstBadge: { nameFormat: BASIC_FORMAT, friendlyName: null, values: ['b-1'] },
      tenant: { nameFormat: BASIC_FORMAT, friendlyName: null, values: ['acme'] },
    });
  });

  test('Apache mod_auth_mellon receives the AWS Role attribute with both values', async () => {
    const mellon = await startMellon({ idpMetadataXml: await (await fetch(`${server.url}/saml/v20/metadata`)).text() });
    try {
      await gql(REGISTER, { xml: mellon.metadataXml, input: { attributeMappings: AWS_MAPPINGS } });
      const web = new WebWalker();
      const login = await web.open(`${mellon.url}/secret/`);
      if (!/name="password"/.test(login.html))
        throw new Error(`expected Latchkey's login page: ${login.status} ${login.html.slice(0, 500)}`);
      const secret = await web.submit(await web.submit(login, { username: 'ines', password: 'ines-password-1' }));
      if (secret.url !== `${mellon.url}/secret/`)
        throw new Error(`mellon did not let the user in: ${secret.status} ${secret.html.slice(0, 500)}\n${mellon.errorLog()}`);
      const attrs = attributesOf(secret);
      // Apache names a CGI's variables with letters, digits and underscores only.
      const env = (name: string) => `MELLON_${name.replace(/[^A-Za-z0-9]/g, '_')}`;
      expect(attrs[env(AWS_ROLE)]?.split(';').sort()).toEqual(AWS_ROLES);
      expect(attrs[env(AWS_SESSION_NAME)]).toBe('ines');
      expect(attrs).not.toHaveProperty('MELLON_uid');
    } finally {
      await mellon.stop();
    }
  });
});
