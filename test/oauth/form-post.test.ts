import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { Browser as Chromium } from 'playwright-core';
import { launchChromium } from '../helpers/chromium.ts';
import { Browser } from '../helpers/flow.ts';
import { get, locationQuery, postForm } from '../helpers/http.ts';
import { htmlForms } from '../helpers/html-forms.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** The policy's directives by name: `script-src 'sha256-…'` → ['script-src', ["'sha256-…'"]]. */
const cspOf = (res: Response): Map<string, string[]> =>
  new Map(
    (res.headers.get('content-security-policy') ?? '')
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...values]) => [name!, values]),
  );

const inlineScripts = (html: string) => [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;

describe('response_mode=form_post (OAuth 2.0 Form Post Response Mode)', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('alice', 'alice-password-1');
  });
  afterAll(() => server.stop());

  test('discovery announces query and form_post', async () => {
    const meta = await (await get(`${server.url}/.well-known/openid-configuration`)).json();
    expect(meta.response_modes_supported).toEqual(['query', 'form_post']);
  });

  test('the code comes back as a page that posts it to the redirect URI, its script allowed by hash', async () => {
    const client = await server.client({ redirectUris: ['http://127.0.0.1:3999/cb?app=1'] });
    const browser = new Browser(server);
    const state = `"><script>alert(1)</script>&`;
    const res = await browser.signIn(
      { client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code', state, response_mode: 'form_post' },
      'alice',
      'alice-password-1',
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const html = await res.text();

    const [form, ...others] = htmlForms(html);
    expect(others).toEqual([]);
    expect(form!.method).toBe('post');
    expect(form!.action).toBe(client.redirectUri);
    const { code, tokencode, state: sent, iss } = form!.fields;
    expect(code).toMatch(/^[\w-]{43}$/);
    expect(tokencode).toBe(code);
    expect(sent).toBe(state);
    expect(iss).toBe(server.url);
    // Escaped: the state's markup is text in an attribute, never a tag.
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toMatch(/<button type="submit">/);

    const csp = cspOf(res);
    const scripts = inlineScripts(html);
    expect(scripts).toHaveLength(1);
    expect(csp.get('script-src')).toEqual([sha256(scripts[0]!)]);
    expect(csp.get('form-action')).toEqual(['http://127.0.0.1:3999']);
    expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
    expect(csp.get('default-src')).toEqual(["'none'"]);
  });

  test('an error after the redirect URI is verified is posted too', async () => {
    const client = await server.client({ scopes: ['openid'] });
    const res = await get(`${server.url}/oauth/v20/authorize`, {
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      response_type: 'code',
      scope: 'openid admin',
      state: 's-err',
      response_mode: 'form_post',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const [form] = htmlForms(await res.text());
    expect(form!.action).toBe(client.redirectUri);
    expect(form!.fields).toMatchObject({ error: 'invalid_scope', state: 's-err', iss: server.url });
    expect(form!.fields.error_description).toContain('admin');
  });

  test('before the redirect URI is verified, form_post changes nothing: an error page', async () => {
    const client = await server.client();
    const res = await postForm(`${server.url}/oauth/v20/authorize`, {
      client_id: client.clientId,
      redirect_uri: 'http://evil.example/cb',
      response_type: 'code',
      response_mode: 'form_post',
    });
    expect(res.status).toBe(400);
    expect(htmlForms(await res.text())).toEqual([]);
  });

  test('an unknown response_mode is invalid_request, by redirect', async () => {
    const client = await server.client();
    for (const mode of ['fragment', 'web_message', 'FORM_POST']) {
      const res = await get(`${server.url}/oauth/v20/authorize`, {
        client_id: client.clientId,
        redirect_uri: client.redirectUri,
        response_type: 'code',
        state: 's-m',
        response_mode: mode,
      });
      expect(res.status).toBe(302);
      expect(locationQuery(res)).toMatchObject({ error: 'invalid_request', state: 's-m' });
    }
    const plain = await get(`${server.url}/oauth/v20/authorize`, {
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      response_type: 'code',
      response_mode: 'query',
    });
    expect(plain.status).toBe(200); // the login page: query is the default, spelled out
  });
});

describe('form_post in Chromium: a relying party on another port receives the POST', () => {
  let server: TestServer;
  let chromium: Chromium;
  let rp: Server;
  let callback: string;
  const received: Record<string, string>[] = [];
  const tokens: Record<string, unknown>[] = [];
  let rpClient: { clientId: string; clientSecret: string | null } | undefined;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    await server.user('grace', 'grace-password-1');
    // The relying party: its callback takes the POST and redeems the code, server to server.
    const app = express();
    app.post('/callback', express.urlencoded({ extended: false }), async (req, res) => {
      const fields = req.body as Record<string, string>;
      received.push(fields);
      const client = rpClient!;
      const answer = await postForm(`${server.url}/oauth/v20/token`, {
        grant_type: 'authorization_code',
        code: fields.code,
        redirect_uri: callback,
        client_id: client.clientId,
        client_secret: client.clientSecret!,
      });
      tokens.push((await answer.json()) as Record<string, unknown>);
      res.type('html').send(`<h1>signed in at the app</h1>`);
    });
    rp = app.listen(0, '127.0.0.1');
    await new Promise<void>((r) => rp.once('listening', r));
    callback = `http://127.0.0.1:${(rp.address() as AddressInfo).port}/callback`;
    rpClient = await server.client({ name: 'Form app', redirectUris: [callback] });
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    rp?.close();
    await server?.stop();
  });

  test('sign in on the real login page; the RP gets the code by POST and exchanges it for tokens', async () => {
    const context = await chromium.newContext();
    const page = await context.newPage();
    const blocked: string[] = [];
    page.on('console', (m) => m.type() === 'error' && blocked.push(m.text()));
    const query = new URLSearchParams({
      client_id: rpClient!.clientId,
      redirect_uri: callback,
      response_type: 'code',
      response_mode: 'form_post',
      scope: 'openid',
      state: 'st-fp',
    });
    await page.goto(`${server.url}/oauth/v20/authorize?${query}`);
    await page.fill('input[name=username]', 'grace');
    await page.fill('input[name=password]', 'grace-password-1');
    await page.click('button[type=submit]');
    await page.waitForURL(callback);
    await expect(page.textContent('h1')).resolves.toBe('signed in at the app');

    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ state: 'st-fp', iss: server.url });
    expect(received[0]!.tokencode).toBe(received[0]!.code);
    expect(tokens[0]).toMatchObject({ token_type: 'bearer' });
    expect(tokens[0]!.access_token).toEqual(expect.any(String));
    expect(tokens[0]!.id_token).toEqual(expect.any(String));
    // The script ran under the page's CSP: no violation was reported.
    expect(blocked.filter((m) => /Content Security Policy/i.test(m))).toEqual([]);
    await context.close();
  });
});
