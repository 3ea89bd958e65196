/**
 * The console's sign-in, as the built-in public client `admin-console`: authorization code with PKCE
 * (S256), state and nonce checked, then tokens held in this module's variables only. Nothing of them
 * is ever written to localStorage, sessionStorage or a cookie: a reload or a closed tab forgets them,
 * and the next page load signs in again (at once, without a form, while the SSO session lasts).
 *
 * Only the three single-use values of one round trip to the login page (verifier, state, nonce) wait
 * in sessionStorage while the page is away, and are deleted the moment it comes back: the page that
 * sent the browser away is gone by then, and they are useless without the code it brings back.
 */
import { CLIENT_ID, endpoints, issuer, redirectUri, SCOPE, signedOutUri } from '../config.ts';
import { store } from '../ui/store.ts';
import { jwtClaims, randomValue, s256 } from './pkce.ts';

export interface SignedIn {
  userId: string;
  username: string;
  /** The token carries the `admin` scope: the user has the admin role. */
  admin: boolean;
}

/** Who is signed in; undefined until the sign-in completes. */
export const account = store<SignedIn | undefined>(undefined);

interface Tokens {
  access: string;
  refresh?: string;
  id?: string;
  /** Epoch ms. */
  expiresAt: number;
}

// In memory only.
let tokens: Tokens | undefined;
let renewing: Promise<void> | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;

const PENDING = 'latchkey-console:sign-in';

interface Pending {
  state: string;
  verifier: string;
  nonce: string;
  returnTo: string;
  silent: boolean;
}

export class SignInError extends Error {}

/** Sends the browser to the authorize endpoint; `silent` asks for no page at all (`prompt=none`). */
export async function signIn(returnTo: string, silent = false): Promise<never> {
  const pending: Pending = { state: randomValue(), verifier: randomValue(), nonce: randomValue(), returnTo, silent };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: redirectUri,
    scope: SCOPE,
    state: pending.state,
    nonce: pending.nonce,
    code_challenge: await s256(pending.verifier),
    code_challenge_method: 'S256',
  });
  if (silent) params.set('prompt', 'none');
  // Replacing this page: Back then leads to the page before the console, not to a spent sign-in.
  location.replace(`${endpoints.authorize}?${params}`);
  return new Promise<never>(() => undefined);
}

async function tokenRequest(params: Record<string, string>): Promise<Record<string, unknown>> {
  const res = await fetch(endpoints.token, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: CLIENT_ID, ...params }),
    credentials: 'omit',
  });
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok)
    throw Object.assign(
      new SignInError(`${String(body.error ?? res.status)}: ${String(body.error_description ?? 'the token request failed')}`),
      { status: res.status },
    );
  return body;
}

function keep(body: Record<string, unknown>, nonce?: string): void {
  const id = typeof body.id_token === 'string' ? body.id_token : tokens?.id;
  const claims = id ? jwtClaims(id) : {};
  if (nonce !== undefined) {
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (claims.iss !== issuer || !aud.includes(CLIENT_ID) || claims.nonce !== nonce)
      throw new SignInError('the id_token does not belong to this sign-in (issuer, audience or nonce differ)');
  }
  const lifetime = Number(body.expires_in ?? 300) * 1000;
  tokens = {
    access: String(body.access_token),
    refresh: typeof body.refresh_token === 'string' ? body.refresh_token : undefined,
    id,
    expiresAt: Date.now() + lifetime,
  };
  const scopes = String(body.scope ?? '').split(' ');
  account.set({
    userId: String(claims.sub ?? ''),
    username: String(claims.preferred_username ?? claims.name ?? claims.sub ?? ''),
    admin: scopes.includes('admin'),
  });
  // Renew ahead of expiry: at 80 % of the lifetime, so a slow answer never leaves a gap.
  clearTimeout(timer);
  if (tokens.refresh) timer = setTimeout(() => void renew(), lifetime * 0.8);
}

/**
 * The browser came back to /admin/callback: checks state and issuer (RFC 9207), exchanges the code
 * with the verifier, checks the id_token's nonce. Returns where the user was going.
 */
export async function completeSignIn(query: URLSearchParams): Promise<string> {
  const raw = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  if (!raw) throw new SignInError('this sign-in was not started from this tab, or has already been used');
  const pending = JSON.parse(raw) as Pending;
  if (query.get('state') !== pending.state) throw new SignInError('the answer does not match the request sent (state differs)');
  if (query.get('iss') !== issuer) throw new SignInError('the answer does not come from this server (iss differs)');
  const error = query.get('error');
  if (error) {
    // No session, or the session needs a page: go again, this time with the login page.
    if (pending.silent && ['login_required', 'consent_required', 'interaction_required'].includes(error)) return signIn(pending.returnTo);
    throw new SignInError(`${error}: ${query.get('error_description') ?? 'the sign-in was refused'}`);
  }
  const code = query.get('code');
  if (!code) throw new SignInError('the answer carries no code');
  keep(
    await tokenRequest({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: pending.verifier }),
    pending.nonce,
  );
  return pending.returnTo;
}

/**
 * A new access token from the refresh token (rotated on each use, so never two at once); without
 * one, or when it is refused, a silent round trip to the authorize endpoint (`prompt=none`).
 */
export function renew(): Promise<void> {
  return (renewing ??= (async () => {
    try {
      if (!tokens?.refresh) throw new SignInError('no refresh token');
      keep(await tokenRequest({ grant_type: 'refresh_token', refresh_token: tokens.refresh }));
    } catch (err) {
      // The server or the network is down: keep what we have and try again in a while.
      if (!(err instanceof SignInError) || (err as { status?: number }).status === 503) {
        clearTimeout(timer);
        timer = setTimeout(() => void renew(), 15_000);
        if (tokens && tokens.expiresAt > Date.now()) return;
        throw err;
      }
      tokens = undefined;
      await signIn(location.pathname.replace(/^.*\/admin/, '') + location.search, true);
    } finally {
      renewing = undefined;
    }
  })());
}

/** The access token for the next request, renewed first when it has expired. */
export async function accessToken(): Promise<string> {
  if (renewing) await renewing;
  if (tokens && tokens.expiresAt - 5000 < Date.now()) await renew();
  if (!tokens) throw new SignInError('not signed in');
  return tokens.access;
}

/** RP-initiated logout: ends the SSO session (and the tokens issued under it), then back to /admin/signed-out. */
export function signOut(): void {
  const hint = tokens?.id;
  tokens = undefined;
  clearTimeout(timer);
  const params = new URLSearchParams({ client_id: CLIENT_ID, post_logout_redirect_uri: signedOutUri });
  if (hint) params.set('id_token_hint', hint);
  location.assign(`${endpoints.logout}?${params}`);
}
