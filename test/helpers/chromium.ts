import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium, headless, as every browser test drives it (`CHROMIUM_PATH` to override). */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'],
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
