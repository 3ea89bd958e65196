import { expect } from '@jest/globals';
import { serverNow } from './clock.ts';
import { Browser, exchangeCode, type CodeFlowClient } from './flow.ts';
import { htmlForms } from './html-forms.ts';
import { get, hiddenFields, locationQuery, postForm, type Fields } from './http.ts';
import type { TestServer } from './server.ts';
import { codeAt } from './totp.ts';

export interface Page {
  status: number;
  html: string;
  /** Where a redirect goes. */
  location: string | null;
}

/** The text of the element with this id, as a user reads it. */
export const textOf = (html: string, id: string): string | undefined => new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(html)?.[1];

/** The hidden fields of the page's first form (a login page's second form is its passkey button's). */
export const firstForm = (html: string): Record<string, string> => htmlForms(html)[0]?.fields ?? {};

/** The recovery codes shown in `#recovery-codes`. */
export const recoveryCodesOf = (html: string): string[] =>
  [...(/<div id="recovery-codes">([\s\S]*?)<\/div>/.exec(html)?.[1] ?? '').matchAll(/<code>([^<]+)<\/code>/g)].map((m) => m[1]!);

/**
 * A browser at the account page (docs/multi-factor-sign-in.md): signs in there, posts the page's forms with their CSRF
 * token, and, through the same SSO cookie, takes codes from /oauth/v20/authorize without a login page.
 */
export class AccountBrowser extends Browser {
  constructor(private readonly site: TestServer) {
    super(site);
  }

  /** GET a page of the site with this browser's cookies. */
  async open(path = '/account'): Promise<Page> {
    const res = await get(this.site.url + path, {}, { cookie: this.jar.header() });
    this.jar.store(res);
    return { status: res.status, html: await res.text(), location: res.headers.get('location') };
  }

  /** POST `fields` to `path` as they are, with this browser's cookies. */
  async send(path: string, fields: Fields): Promise<Page> {
    const res = await postForm(this.site.url + path, fields, { cookie: this.jar.header() });
    this.jar.store(res);
    return { status: res.status, html: await res.text(), location: res.headers.get('location') };
  }

  /** The password at the account page's login form; the page that follows (the account, or the second step). */
  async signInAtAccount(username: string, password: string): Promise<Page> {
    const login = await this.open();
    const res = await postForm(`${this.site.url}/account`, { ...firstForm(login.html), username, password }, { cookie: this.jar.header() });
    this.jar.store(res);
    if (res.status === 303) return this.open();
    return { status: res.status, html: await res.text(), location: res.headers.get('location') };
  }

  /** Posts one of the page's forms by its `_action`, with the CSRF token `path` gives this browser. */
  async post(action: string, fields: Fields, path = '/account'): Promise<Page> {
    const { html } = await this.open(path);
    return this.send(path, { _action: action, csrf_token: hiddenFields(html).csrf_token, ...fields });
  }

  /** Whether the account page shows this browser signed in (else it shows the login form). */
  async signedIn(): Promise<boolean> {
    return (await this.open()).html.includes('Signed in as');
  }

  /** A code for `client` from this browser's session: authorize answers with the redirect at once. */
  async code(client: CodeFlowClient): Promise<string> {
    const res = await this.authorize({
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      response_type: 'code',
      scope: 'openid',
      state: 's',
    });
    expect(res.status).toBe(302);
    return locationQuery(res).code!;
  }

  /** Enrols TOTP at /account/mfa/totp on a session that may add a factor: the secret and the recovery codes. */
  async enrolTotp(): Promise<{ secret: string; recoveryCodes: string[] }> {
    const page = await this.open('/account/mfa/totp');
    const secret = textOf(page.html, 'totp-secret');
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const done = await this.send('/account/mfa/totp', { ...firstForm(page.html), code: codeAt(secret!, serverNow()) });
    expect(done.status).toBe(200);
    return { secret: secret!, recoveryCodes: recoveryCodesOf(done.html) };
  }
}

/** A code exchange as the client makes it: the status, and the JSON answer. */
export async function redeem(
  server: TestServer,
  client: CodeFlowClient,
  code: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await exchangeCode(server, client, code);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
