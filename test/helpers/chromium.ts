import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Debian's Chromium, headless, as every browser test drives it (`CHROMIUM_PATH` to override). `extra`
 * adds switches and environment variables: the Kerberos test's `--auth-server-allowlist`, `KRB5_CONFIG`
 * and `KRB5CCNAME`.
 */
export const launchChromium = (extra: { args?: string[]; env?: Record<string, string> } = {}): Promise<Browser> =>
  chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      ...(extra.args ?? []),
    ],
    ...(extra.env ? { env: { ...process.env, ...extra.env } as Record<string, string> } : {}),
  });

/**
 * The client application of a browser test: a page at its redirect URI that the browser lands on,
 * on a free loopback port. `callback` is the redirect URI to register.
 */
export async function startClientApp(): Promise<{ callback: string; close(): void }> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>client app</h1>'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { callback: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, close: () => server.close() };
}

/**
 * A page of `context` with a platform authenticator (Chrome's virtual one, over CDP) that has a
 * resident key and verifies the user: what a passkey-capable laptop offers.
 */
export async function pageWithPasskeys(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return page;
}
