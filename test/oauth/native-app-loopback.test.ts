import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oidc from 'openid-client';
import { Browser } from '../helpers/flow.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A native CLI as git-credential-oauth runs it: listen on a free loopback port, send the browser to
 * authorize with `redirect_uri=http://127.0.0.1:<port>`, take the code the browser brings back, and
 * exchange it with PKCE. RFC 8252 §7.3 and docs/decisions.md "Loopback redirect URIs (native apps)".
 */
async function loopbackListener(host: '127.0.0.1' | '::1'): Promise<{ server: Server; port: number; next: Promise<URL> }> {
  let arrived!: (url: URL) => void;
  const next = new Promise<URL>((resolve) => (arrived = resolve));
  const server = createServer((req, res) => {
    res.end('You may close this window.');
    arrived(new URL(req.url!, `http://${req.headers.host}`));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, port: (server.address() as AddressInfo).port, next };
}

describe('native apps on a loopback port (RFC 8252 §7.3)', () => {
  let server: TestServer;
  let cli: { clientId: string };
  const listeners: Server[] = [];

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('linus', 'linus-password-1');
    cli = await server.client({
      name: 'git',
      confidential: false,
      redirectUris: ['http://127.0.0.1/', 'http://[::1]/callback'],
      scopes: ['openid', 'profile'],
    });
  });
  afterAll(async () => {
    for (const l of listeners) l.close();
    await server?.stop();
  });

  /** The CLI's whole flow with openid-client, the browser signing in; returns the token answer. */
  async function cliFlow(host: '127.0.0.1' | '::1', redirectUri: (port: number) => string) {
    const listener = await loopbackListener(host);
    listeners.push(listener.server);
    const config = await oidc.discovery(new URL(server.url), cli.clientId, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const redirect_uri = redirectUri(listener.port);
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri,
      scope: 'openid profile',
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });

    const browser = new Browser(server);
    const back = await browser.signIn(Object.fromEntries(url.searchParams), 'linus', 'linus-password-1');
    expect(back.status).toBe(303);
    // The browser follows the redirect to the CLI's listener, which receives the code.
    await fetch(back.headers.get('location')!);
    const received = await listener.next;
    // openid-client sends the URL its listener was called at as the token request's redirect_uri.
    try {
      return await oidc.authorizationCodeGrant(config, received, { pkceCodeVerifier: verifier, expectedState: state });
    } catch (err) {
      throw new Error(`the token request was refused: ${JSON.stringify((err as { cause?: unknown }).cause)}`);
    }
  }

  test('http://127.0.0.1 registered: any port, with or without the slash, signs in', async () => {
    const tokens = await cliFlow('127.0.0.1', (port) => `http://127.0.0.1:${port}`);
    expect(tokens.access_token).toBeTruthy();
    expect(tokens.claims()?.preferred_username ?? tokens.claims()?.sub).toBeTruthy();
    expect((await cliFlow('127.0.0.1', (port) => `http://127.0.0.1:${port}/`)).access_token).toBeTruthy();
  });

  test('http://[::1]/callback registered: any port on that path', async () => {
    const tokens = await cliFlow('::1', (port) => `http://[::1]:${port}/callback`);
    expect(tokens.access_token).toBeTruthy();
  });

  test('nothing else is loosened: other paths, localhost, https and ports of other hosts are refused before any page', async () => {
    const browser = new Browser(server);
    for (const redirect_uri of [
      'http://127.0.0.1:40415/other',
      'http://127.0.0.1:40415/?x=1',
      'http://localhost:40415/',
      'https://127.0.0.1:40415/',
      'http://127.0.0.2:40415/',
      'http://[::1]:40415/',
      'http://[::1]:40415/callback/more',
      'http://127.0.0.1:99999/',
      'http://127.0.0.1:40415@evil.example/',
    ]) {
      const res = await browser.authorize({
        client_id: cli.clientId,
        redirect_uri,
        response_type: 'code',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      });
      expect([redirect_uri, res.status, res.headers.get('location')]).toEqual([redirect_uri, 400, null]);
      expect(await res.text()).toContain('redirect_uri_mismatch');
    }
  });

  test('a loopback URI registered with a port asked for that port: it matches only exactly', async () => {
    const fixed = await server.client({ name: 'fixed-port tool', confidential: false, redirectUris: ['http://127.0.0.1:9000/cb'] });
    const browser = new Browser(server);
    const challenge = {
      response_type: 'code',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    };
    expect((await browser.authorize({ client_id: fixed.clientId, redirect_uri: 'http://127.0.0.1:1234/cb', ...challenge })).status).toBe(
      400,
    );
    expect((await browser.authorize({ client_id: fixed.clientId, redirect_uri: 'http://127.0.0.1:9000/cb', ...challenge })).status).toBe(
      200,
    );
  });

  test('a registered https redirect URI still matches only character for character', async () => {
    const web = await server.client({ name: 'web', redirectUris: ['https://app.example.com/cb'] });
    const browser = new Browser(server);
    const res = await browser.authorize({
      client_id: web.clientId,
      redirect_uri: 'https://app.example.com:8443/cb',
      response_type: 'code',
    });
    expect(res.status).toBe(400);
  });
});
