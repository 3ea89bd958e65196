import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import type { Browser } from 'playwright-core';
import { launchChromium, startClientApp } from '../helpers/chromium.ts';
import { exchangeCode } from '../helpers/flow.ts';
import { startOidcUpstream, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** docs/upstream-identity-providers.md in a real Chromium: the login page's "Sign in with <name>", the upstream's own login, back to the app. */
describe('signing in through an upstream in Chromium', () => {
  let server: TestServer;
  let upstream: OidcUpstream;
  let browser: Browser;
  let appServer: Awaited<ReturnType<typeof startClientApp>>;
  let callback: string;

  beforeAll(async () => {
    const port = await freePort();
    const home = `http://127.0.0.1:${port}`;
    upstream = await startOidcUpstream([`${home}/login/upstream/partner/callback`]);
    upstream.accounts.set('u-eve', { sub: 'u-eve', preferred_username: 'eve', email: 'eve@partner.test', name: 'Eve Partner' });
    server = await startTestServer('sqlite', {
      port,
      publicUrl: home,
      identity: {
        upstreams: [
          { id: 'partner', name: 'Partner IdP', issuer: upstream.issuer, clientId: upstream.clientId, clientSecret: upstream.clientSecret },
        ],
      },
    });
    appServer = await startClientApp();
    callback = appServer.callback;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    appServer?.close();
    await server?.stop();
    await upstream?.stop();
  });

  test('click "Sign in with Partner IdP", sign in there, land at the app with a code whose id_token says fed', async () => {
    const client = await server.client({ name: 'Wiki', redirectUris: [callback] });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(
      `${server.url}/oauth/v20/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: callback, response_type: 'code', state: 'b1', scope: 'openid profile' })}`,
    );
    await page.getByRole('button', { name: 'Sign in with Partner IdP' }).click();

    await page.waitForURL((u) => u.href.startsWith(upstream.issuer));
    await page.fill('#login', 'u-eve');
    await page.getByRole('button', { name: 'Sign in at the upstream' }).click();

    await page.waitForURL((u) => u.href.startsWith(callback));
    const url = new URL(page.url());
    expect(url.searchParams.get('state')).toBe('b1');
    const tokens = (await (await exchangeCode(server, client, url.searchParams.get('code')!)).json()) as { id_token: string };
    expect(decodeJwt(tokens.id_token)).toMatchObject({ amr: ['fed'], preferred_username: 'eve@partner' });

    // The SSO session is Latchkey's: a second authorize needs no upstream at all.
    await page.goto(
      `${server.url}/oauth/v20/authorize?${new URLSearchParams({ client_id: client.clientId, redirect_uri: callback, response_type: 'code', state: 'b2', scope: 'openid' })}`,
    );
    await page.waitForURL((u) => u.href.startsWith(callback) && u.searchParams.get('state') === 'b2');
    await context.close();
  });
});
