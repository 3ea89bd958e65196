import { CookieJar, get, hiddenFields, locationQuery, postForm, type Fields } from './http.ts';
import type { TestServer } from './server.ts';

/** A browser going through /oauth/v20/authorize, as plain HTTP with a cookie jar. */
export class Browser {
  readonly jar = new CookieJar();

  constructor(private readonly server: TestServer) {}

  async authorize(query: Fields, path = '/oauth/v20/authorize'): Promise<Response> {
    const res = await get(this.server.url + path, query, { cookie: this.jar.header() });
    this.jar.store(res);
    return res;
  }

  /** Submits the form on `page` (login or consent) with the given fields. */
  async submit(page: Response, fields: Fields, path = '/oauth/v20/authorize'): Promise<Response> {
    const html = await page.text();
    const res = await postForm(this.server.url + path, { ...hiddenFields(html), ...fields }, { cookie: this.jar.header() });
    this.jar.store(res);
    return res;
  }

  /** Authorize, sign in on the page that appears, and return the redirect back to the client. */
  async signIn(query: Fields, username: string, password: string): Promise<Response> {
    const page = await this.authorize(query);
    if (page.status !== 200) throw new Error(`expected the login page, got ${page.status} ${page.headers.get('location')}`);
    return this.submit(page, { username, password });
  }
}

export interface CodeFlowClient {
  clientId: string;
  clientSecret: string | null;
  redirectUri: string;
}

/** Runs the code flow to the code: returns the redirect's query (`code`, `tokencode`, `state`). */
export async function obtainCode(browser: Browser, client: CodeFlowClient, username: string, password: string, extra: Fields = {}) {
  const res = await browser.signIn(
    { client_id: client.clientId, redirect_uri: client.redirectUri, response_type: 'code', state: 'st-1', ...extra },
    username,
    password,
  );
  if (res.status !== 303) throw new Error(`sign-in did not redirect: ${res.status} ${await res.text()}`);
  return locationQuery(res);
}

export async function exchangeCode(server: TestServer, client: CodeFlowClient, code: string, extra: Fields = {}) {
  return postForm(`${server.url}/oauth/v20/token`, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: client.redirectUri,
    client_id: client.clientId,
    client_secret: client.clientSecret ?? undefined,
    ...extra,
  });
}
