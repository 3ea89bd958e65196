import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { launchChromium } from '../helpers/chromium.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * "My applications" (docs/access-and-claims.md): `/apps` in Debian's Chromium at 375 px. A user signs
 * in there (the page's own sign-in, then back), sees exactly the applications whose access policies
 * let them in and that can be started from Latchkey, each a link to its launch URL (a client's
 * initiate_login_uri with `iss`, an SP's IdP-initiated sign-on); the account page links to it.
 */
const PHONE = { width: 375, height: 740 };

/** The applications' side: every request noted (a client's login initiation, an SP's ACS). */
async function startApplications(): Promise<{ base: string; seen: Array<{ method: string; url: string; body: string }>; server: Server }> {
  const seen: Array<{ method: string; url: string; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, body });
      res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>the application</h1>');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

describe.each(databaseKinds)('My applications on %s', (kind) => {
  let server: TestServer;
  let browser: Browser;
  let apps: Awaited<ReturnType<typeof startApplications>>;
  let token: string;
  let ids: Record<string, string>;

  const gql = async (query: string, variables: Record<string, unknown>) => {
    const answer = await graphqlPost(server, token, query, variables);
    expect(answer.errors).toBeUndefined();
    return answer.data!;
  };
  const registerClient = async (input: Record<string, unknown>) =>
    (
      (await gql('mutation($input: RegisterClientInput!) { registerClient(input: $input) { client { clientId launchUrl } } }', { input }))
        .registerClient as { client: { clientId: string; launchUrl: string | null } }
    ).client;
  const registerSp = (input: Record<string, unknown>) =>
    gql('mutation($input: SamlServiceProviderInput) { registerSamlServiceProvider(input: $input) { entityId launchUrl } }', { input });

  beforeAll(async () => {
    [server, browser, apps] = await Promise.all([startTestServer(kind), launchChromium(), startApplications()]);
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    ids = {
      alice: await server.user('alice', 'alice-password-1', { groups: ['Engineering'] }),
      bob: await server.user('bob', 'bob-password-1', { groups: ['cn=finance,ou=groups,dc=example,dc=com'] }),
      dave: await server.user('dave', 'dave-password-1'),
    };
    const redirectUris = [`${apps.base}/callback`];
    ids.wiki = (await registerClient({ name: 'Wiki', redirectUris, initiateLoginUri: `${apps.base}/wiki/login` })).clientId;
    // Groups compare without case.
    await registerClient({
      name: 'Payroll',
      redirectUris,
      initiateLoginUri: `${apps.base}/payroll/start?tenant=north`,
      access: { mode: 'ASSIGNED', groups: ['engineering'] },
    });
    await registerClient({
      name: 'Chat',
      redirectUris,
      initiateLoginUri: `${apps.base}/chat/login`,
      access: { mode: 'ASSIGNED', users: [ids.bob] },
    });
    // Never listed: no launch URL; no one assigned; browser sign-on off.
    await registerClient({ name: 'Reports API', redirectUris });
    await registerClient({
      name: 'Nobody’s',
      redirectUris,
      initiateLoginUri: `${apps.base}/nobody`,
      access: { mode: 'ASSIGNED', backends: ['elsewhere'] },
    });
    await registerClient({ name: 'Kiosk', redirectUris, initiateLoginUri: `${apps.base}/kiosk`, ssoEnabled: false });
    await registerSp({
      entityId: 'https://expenses.example.com/saml',
      name: 'Expenses',
      assertionConsumerServiceUrls: [`${apps.base}/expenses/acs`],
      allowIdpInitiated: true,
      access: { mode: 'ASSIGNED', groups: ['CN=Finance,OU=Groups,DC=example,DC=com'] },
    });
    await registerSp({
      entityId: 'https://docs.example.com/saml',
      name: 'Docs',
      assertionConsumerServiceUrls: [`${apps.base}/docs/acs`],
      allowIdpInitiated: false,
    });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    apps?.server.close();
  });

  /** A phone's browser, signed in at /apps through the page's own sign-in. */
  async function signedInAtApps(username: string, password: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: PHONE });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const response = await page.goto(`${server.url}/apps`);
    expect(response!.status()).toBe(200);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expect(page.getByText('to continue to your applications').isVisible()).resolves.toBe(true);
    await page.fill('input[name=username]', username);
    await page.fill('input[name=password]', password);
    await page.click('button[type=submit]');
    await page.getByRole('heading', { name: 'My applications' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/apps');
    return { context, page };
  }

  const listed = (page: Page) =>
    page
      .locator('ul.apps a')
      .evaluateAll((links) => links.map((a) => ({ name: a.textContent, href: (a as HTMLAnchorElement).getAttribute('href') })));
  const fits = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= innerWidth);

  test('each user sees exactly the applications their policies allow, with their launch URLs, at phone width', async () => {
    const iss = encodeURIComponent(server.url);
    const expected = {
      alice: [
        { name: 'Payroll', href: `${apps.base}/payroll/start?tenant=north&iss=${iss}` },
        { name: 'Wiki', href: `${apps.base}/wiki/login?iss=${iss}` },
      ],
      bob: [
        { name: 'Chat', href: `${apps.base}/chat/login?iss=${iss}` },
        { name: 'Expenses', href: `${server.url}/saml/v20/sso?sp=${encodeURIComponent('https://expenses.example.com/saml')}` },
        { name: 'Wiki', href: `${apps.base}/wiki/login?iss=${iss}` },
      ],
      dave: [{ name: 'Wiki', href: `${apps.base}/wiki/login?iss=${iss}` }],
    };
    for (const [username, want] of Object.entries(expected)) {
      const { context, page } = await signedInAtApps(username, `${username}-password-1`);
      try {
        expect(await listed(page)).toEqual(want);
        expect(await fits(page)).toBe(true);
        // Big tap targets: each link is a block at least 44 px high, the width of the page's content.
        for (const box of await page.locator('ul.apps a').evaluateAll((links) => links.map((a) => a.getBoundingClientRect().toJSON()))) {
          expect(box.height).toBeGreaterThanOrEqual(44);
          expect(box.width).toBeGreaterThan(PHONE.width * 0.7);
        }
        if (process.env.SCREENSHOT_DIR)
          await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/apps-${username}-375.png`, fullPage: true });
      } finally {
        await context.close();
      }
    }
  });

  test('a client link starts its login initiation with iss; an SP link signs in at the SP, IdP-initiated', async () => {
    const { context, page } = await signedInAtApps('bob', 'bob-password-1');
    try {
      await page.getByRole('link', { name: 'Chat' }).click();
      await page.getByRole('heading', { name: 'the application' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/chat/login');
      expect(new URL(page.url()).searchParams.get('iss')).toBe(server.url);

      await page.goto(`${server.url}/apps`);
      await page.getByRole('link', { name: 'Expenses' }).click();
      await page.waitForURL(`${apps.base}/expenses/acs`);
      const acs = apps.seen.find((r) => r.url === '/expenses/acs')!;
      expect(acs.method).toBe('POST');
      const response = Buffer.from(new URLSearchParams(acs.body).get('SAMLResponse')!, 'base64').toString('utf8');
      expect(response).toContain(`Destination="${apps.base}/expenses/acs"`);
      expect(response).toContain('urn:oasis:names:tc:SAML:2.0:status:Success');
    } finally {
      await context.close();
    }
  });

  test('a user with no applications gets the empty state; the account page links to My applications; nothing is audited', async () => {
    // Wiki, open to everyone, is now for one user: dave is left with nothing.
    await gql('mutation($id: ID!, $input: UpdateClientInput!) { updateClient(clientId: $id, input: $input) { clientId } }', {
      id: ids.wiki,
      input: { access: { mode: 'ASSIGNED', users: [ids.alice] } },
    });
    const { context, page } = await signedInAtApps('dave', 'dave-password-1');
    try {
      expect(await listed(page)).toEqual([]);
      await expect(page.locator('#apps-empty').textContent()).resolves.toContain('No applications to show');
      expect(await fits(page)).toBe(true);

      const auditCount = async () =>
        ((await gql('{ auditEvents(first: 1) { totalCount } }', {})).auditEvents as { totalCount: number }).totalCount;
      const before = await auditCount();
      await page.reload();
      await page.getByRole('heading', { name: 'My applications' }).waitFor();
      expect(await auditCount()).toBe(before);

      await page.getByRole('link', { name: 'Your account' }).click();
      await page.getByRole('heading', { name: 'Your account' }).waitFor();
      await page.getByRole('link', { name: 'My applications' }).click();
      await page.getByRole('heading', { name: 'My applications' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/apps');
    } finally {
      await context.close();
    }
  });

  test('signed out, /apps shows the sign-in form posting back to /apps; a forged form is refused', async () => {
    const res = await fetch(`${server.url}/apps`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('action="/apps"');
    expect(html).not.toContain('ul class="apps"');
    const forged = await fetch(`${server.url}/apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _action: 'login', username: 'dave', password: 'dave-password-1', csrf_token: 'forged' }),
      redirect: 'manual',
    });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('set-cookie') ?? '').not.toContain('lk_sso');
  });
});
