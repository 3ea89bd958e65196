import { cookieHeader, json, postForm, request, setCookies, type HttpResponse } from './http.ts';

/**
 * The OAuth client side of the bench: what an application and a browser do against Latchkey, through
 * its public endpoints only. Used for the set-up (tokens, SSO sessions, refresh-token pools) and by
 * the code-flow driver.
 */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

export interface WebClient extends ClientCredentials {
  redirectUri: string;
  scope: string;
}

export interface TokenResponse {
  access_token: string;
  refresh_token?: string;
  id_token?: string;
}

export const TOKEN_PATH = '/oauth/v20/token';
export const AUTHORIZE_PATH = '/oauth/v20/authorize';

export async function passwordGrant(
  base: string,
  client: ClientCredentials,
  username: string,
  password: string,
  scope?: string,
): Promise<TokenResponse> {
  const res = await postForm(base + TOKEN_PATH, {
    grant_type: 'password',
    client_id: client.clientId,
    client_secret: client.clientSecret,
    username,
    password,
    ...(scope ? { scope } : {}),
  });
  return json<TokenResponse>(res, 'password grant');
}

export async function clientCredentialsGrant(base: string, client: ClientCredentials): Promise<TokenResponse> {
  const res = await postForm(base + TOKEN_PATH, {
    grant_type: 'client_credentials',
    client_id: client.clientId,
    client_secret: client.clientSecret,
  });
  return json<TokenResponse>(res, 'client_credentials grant');
}

const authorizeQuery = (client: WebClient) =>
  new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    response_type: 'code',
    scope: client.scope,
    state: 'bench',
  }).toString();

/** The authorize request of a browser starting the web client's code flow: path and query. */
export const authorizePathAndQuery = (client: WebClient): string => `${AUTHORIZE_PATH}?${authorizeQuery(client)}`;

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&#x27;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The first form of a page: its action and hidden inputs, whatever the order of the attributes. */
function firstForm(html: string): { action: string; fields: Record<string, string> } {
  const m = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html);
  if (!m) throw new Error(`no form on the page: ${html.slice(0, 300)}`);
  const attrs = (tag: string) => {
    const out: Record<string, string> = {};
    for (const a of tag.matchAll(/([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) out[a[1]!.toLowerCase()] = unescapeHtml(a[2] ?? a[3] ?? '');
    return out;
  };
  const fields: Record<string, string> = {};
  for (const input of m[2]!.matchAll(/<input\b([^>]*)>/gi)) {
    const a = attrs(input[1]!);
    if (a.type?.toLowerCase() === 'hidden' && a.name) fields[a.name] = a.value ?? '';
  }
  return { action: attrs(m[1]!).action ?? '', fields };
}

/** The `code` of a redirect back to the client, or an error saying what came instead. */
function codeFrom(res: HttpResponse, what: string): string {
  const location = res.headers.location;
  if (res.status < 300 || res.status > 303 || !location)
    throw new Error(`${what}: expected a redirect with a code, got HTTP ${res.status} ${res.body.slice(0, 200)}`);
  const code = new URL(location, 'http://client.invalid').searchParams.get('code');
  if (!code) throw new Error(`${what}: redirect without a code: ${location}`);
  return code;
}

/**
 * A browser signing in on the login page: returns its cookie jar, which holds the SSO session
 * cookie from then on (and the CSRF and device cookies, as a browser would keep them).
 */
export async function browserSignIn(base: string, client: WebClient, username: string, password: string): Promise<Record<string, string>> {
  const url = `${base}${AUTHORIZE_PATH}?${authorizeQuery(client)}`;
  const page = await request(url);
  if (page.status !== 200)
    throw new Error(`authorize without a session: expected the login page, got HTTP ${page.status} ${page.body.slice(0, 200)}`);
  const jar = setCookies(page);
  const { action, fields } = firstForm(page.body);
  const submitted = await postForm(
    new URL(action || url, url).toString(),
    { ...fields, username, password },
    { cookie: cookieHeader(jar) },
  );
  codeFrom(submitted, 'sign-in');
  Object.assign(jar, setCookies(submitted));
  return jar;
}

/** The authorize request of a signed-in browser: answered at once with a redirect carrying a code. */
export async function authorizeWithSession(base: string, client: WebClient, cookie: string): Promise<string> {
  const res = await request(`${base}${AUTHORIZE_PATH}?${authorizeQuery(client)}`, { headers: { cookie } });
  return codeFrom(res, 'authorize with the SSO cookie');
}

export async function exchangeCode(base: string, client: WebClient, code: string): Promise<TokenResponse> {
  const res = await postForm(base + TOKEN_PATH, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: client.redirectUri,
    client_id: client.clientId,
    client_secret: client.clientSecret,
  });
  return json<TokenResponse>(res, 'code exchange');
}
