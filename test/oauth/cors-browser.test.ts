import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import type { Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/chromium.ts';
import { freePort } from '../helpers/ports.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** A page on its own loopback port: a browser app's origin. */
async function pageServer(): Promise<{ origin: string; close(): Promise<void> }> {
  const port = await freePort();
  const app = express().get('/', (_req, res) => {
    res.type('html').send('<!doctype html><title>SPA</title>');
  });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

interface Outcome {
  ok: boolean;
  token?: { access_token?: string };
  userinfo?: Record<string, unknown>;
  error?: string;
}

/** docs/connect-an-application.md, browser apps: Chromium's own CORS check, from the app's origin and from another. */
describe('CORS in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let spa: Awaited<ReturnType<typeof pageServer>>;
  let foreign: Awaited<ReturnType<typeof pageServer>>;
  let clientId: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('heidi', 'heidi-password-1', { email: 'heidi@example.org' });
    [spa, foreign] = await Promise.all([pageServer(), pageServer()]);
    // Its web origin is its redirect URI's: the default.
    ({ clientId } = await server.client({ confidential: false, grantTypes: ['password'], redirectUris: [`${spa.origin}/callback`] }));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([spa?.close(), foreign?.close()]);
    await server?.stop();
  });

  /** From a page at `origin`: a token (a form POST, no preflight), then userinfo with a bearer (preflighted). */
  async function signInFrom(origin: string): Promise<Outcome> {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${origin}/`);
    return page.evaluate(
      async ({ base, clientId }) => {
        try {
          const tokenRes = await fetch(`${base}/oauth/v20/token`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
              grant_type: 'password',
              client_id: clientId,
              username: 'heidi',
              password: 'heidi-password-1',
              scope: 'openid email',
            }),
          });
          const token = (await tokenRes.json()) as { access_token: string };
          const userinfoRes = await fetch(`${base}/connect/v10/userinfo`, { headers: { authorization: `Bearer ${token.access_token}` } });
          return { ok: true, token, userinfo: (await userinfoRes.json()) as Record<string, unknown> };
        } catch (e) {
          return { ok: false, error: String(e) };
        }
      },
      { base: server.url, clientId },
    );
  }

  test("the app's own page gets a token and reads userinfo across origins", async () => {
    const outcome = await signInFrom(spa.origin);
    expect(outcome.ok).toBe(true);
    expect(outcome.token?.access_token).toBeDefined();
    expect(outcome.userinfo).toMatchObject({ email: 'heidi@example.org' });
  });

  test('a page on another origin cannot read the answer', async () => {
    const outcome = await signInFrom(foreign.origin);
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatch(/Failed to fetch/);
  });
});
