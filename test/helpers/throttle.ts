import { expect } from '@jest/globals';
import { Browser } from './flow.ts';
import { basic, postForm } from './http.ts';
import type { TestServer } from './server.ts';

/** Helpers for the brute-force tests (docs/decisions.md): guesses, their answers, browsers and a second process. */

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The message of a throttled attempt, on the token endpoint and on the login page alike. */
export const TOO_MANY = /too many failed attempts, retry after \d+ s/;

export interface PasswordClient {
  clientId: string;
  clientSecret: string | null;
}

/** One password grant against the server at `baseUrl` (any process of the deployment). */
export const passwordGrant = (baseUrl: string, client: PasswordClient, username: string, password: string) =>
  postForm(
    `${baseUrl}/oauth/v20/token`,
    { grant_type: 'password', username, password },
    { authorization: basic(client.clientId, client.clientSecret!) },
  );

export interface Answer {
  status: number;
  retryAfter: string | null;
  body: { error?: string; error_description?: string; access_token?: string };
}

export const answer = async (res: Response): Promise<Answer> => ({
  status: res.status,
  retryAfter: res.headers.get('retry-after'),
  body: (await res.json()) as Answer['body'],
});

/** How many answers had each status, e.g. `{ 400: 5, 429: 35 }`. */
export const tally = (answers: Array<{ status: number }>): Record<number, number> => {
  const t: Record<number, number> = {};
  for (const a of answers) t[a.status] = (t[a.status] ?? 0) + 1;
  return t;
};

/** A failed password check: 400 `invalid_grant`, nothing about a delay. */
export function expectRefused(a: Answer): void {
  expect({ status: a.status, error: a.body.error, retryAfter: a.retryAfter }).toEqual({
    status: 400,
    error: 'invalid_grant',
    retryAfter: null,
  });
}

/** A throttled attempt on the token endpoint: 429, `Retry-After`, and the documented body. */
export function expectThrottled(a: Answer): void {
  expect(a.status).toBe(429);
  expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
  expect(a.body).toEqual({ error: 'invalid_grant', error_description: `too many failed attempts, retry after ${a.retryAfter} s` });
}

/** A throttled attempt on the login page: 429, `Retry-After`, and the same text in the page. */
export async function expectThrottledPage(res: Response): Promise<void> {
  expect(res.status).toBe(429);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(await res.text()).toContain(`too many failed attempts, retry after ${res.headers.get('retry-after')} s`);
}

/** The Set-Cookie line a response sent for `name`, if any. */
export const setCookieLine = (res: Response, name: string) => res.headers.getSetCookie().find((line) => line.startsWith(`${name}=`));

/**
 * A new browser that holds only some of another browser's cookies: e.g. the device cookie of an
 * earlier sign-in, without the SSO session (which expired or was signed out).
 */
export function browserWith(server: TestServer, from: Browser, names: string[]): Browser {
  const browser = new Browser(server);
  for (const pair of from.jar.header().split('; ')) {
    const name = pair.slice(0, pair.indexOf('='));
    if (names.includes(name)) browser.jar.store(new Response(null, { headers: { 'set-cookie': `${pair}; Path=/; HttpOnly` } }));
  }
  return browser;
}

/** The authorization request of a code-flow client, which shows the login page to a browser. */
export const codeRequest = (client: { clientId: string; redirectUri: string }, extra: Record<string, string> = {}) => ({
  client_id: client.clientId,
  redirect_uri: client.redirectUri,
  response_type: 'code',
  state: 'st-1',
  ...extra,
});
