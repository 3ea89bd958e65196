import { redirectUriMatches } from '../../clients/redirect-match.ts';
import type { Client } from '../../clients/model.ts';
import type { AppContext } from '../../context.ts';
import { forClient, OAuthError, oauthError } from '../../errors/oauth.ts';
import type { Params } from '../../http/params.ts';
import { resourcesParam } from '../resources-param.ts';
import { joinResources } from '../../clients/resource.ts';
import { scopesAllowed, withoutIgnoredScopes } from '../../clients/scopes.ts';

/** How the authorization response reaches the client: `query` (the default) or `form_post`. */
export type ResponseMode = 'query' | 'form_post';

/** An error that, the client and redirect URI being verified, goes back to the client by redirect. */
export class RedirectError extends Error {
  constructor(
    readonly oauth: OAuthError,
    readonly redirectUri: string,
    readonly state: string | undefined,
    readonly responseMode: ResponseMode = 'query',
  ) {
    super(oauth.message);
  }
}

export interface AuthorizeRequest {
  client: Client;
  redirectUri: string;
  scopes: string[];
  state?: string;
  nonce?: string;
  codeChallenge?: string;
  codeChallengeMethod?: 'S256' | 'plain';
  prompt: Set<string>;
  responseMode: ResponseMode;
  maxAge?: number;
  /** RFC 8707: the resources the tokens are for (space-separated), bound to the code. */
  resource?: string;
  /** A configured upstream identity provider to sign in at, skipping the login page (docs/upstream-identity-providers.md). */
  idp?: string;
  /** The request's own parameters, to carry through the login and consent forms. */
  carried: Record<string, string>;
}

const carriedNames = [
  'client_id',
  'redirect_uri',
  'response_type',
  'response_mode',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'prompt',
  'max_age',
  'grant_type',
  'resource',
  'idp',
] as const;

/** Response types of OAuth 2.0 / OIDC that exist but this server does not serve. */
const knownResponseTypes = new Set(['token', 'id_token', 'none']);
const pkceValue = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * Validates the whole authorize request before any page is shown (docs/decisions.md): nobody signs in only to
 * be told the request was bad. Until client and redirect URI are verified, errors are OAuthErrors
 * (shown on a page); afterwards RedirectErrors.
 */
export async function parseAuthorizeRequest(ctx: AppContext, p: Params): Promise<AuthorizeRequest> {
  const clientId = p.client_id;
  if (!clientId) throw oauthError('empty_client_id', 'client_id is required');
  const client = await ctx.clients.find(clientId);
  if (!client) throw oauthError('invalid_client_id', 'client_id is not a registered client');
  const redirectUri = p.redirect_uri;
  if (!redirectUri) throw oauthError('empty_redirect_uri', 'redirect_uri is required');
  if (!redirectUriMatches(client.redirectUris, redirectUri)) {
    throw oauthError('redirect_uri_mismatch', 'redirect_uri does not match a registered redirect URI');
  }

  const state = p.state;
  const modeParam = p.response_mode ?? 'query';
  // An unknown mode is answered in the default one: the client may not understand what it asked for.
  if (modeParam !== 'query' && modeParam !== 'form_post') {
    throw new RedirectError(
      oauthError('invalid_request', `response_mode ${modeParam} is not supported; use query or form_post`),
      redirectUri,
      state,
    );
  }
  const responseMode: ResponseMode = modeParam;
  // From here the client is known: its errors are in the codes it reads (docs/connect-an-application.md).
  const fail = (error: OAuthError['error'], description: string) =>
    new RedirectError(
      forClient(oauthError(error, description), client.errorCodes, 'authorize') as OAuthError,
      redirectUri,
      state,
      responseMode,
    );

  if (!client.oauthEnabled) throw fail('app_unsupport_oauth', 'this application may not use OAuth');
  if (!client.ssoEnabled) throw fail('app_unsupport_sso', 'this application may not use single sign-on');

  const responseType = p.response_type;
  if (!responseType) throw fail('empty_response_type', 'response_type is required');
  if (responseType !== 'code') {
    const parts = responseType.split(' ');
    const real = parts.every((t) => t === 'code' || knownResponseTypes.has(t));
    if (real) throw fail('unsupported_response_type', `response_type ${responseType} is not supported; use code`);
    throw fail('invalid_response_type', `response_type ${responseType} is not a response type`);
  }
  const grantType = p.grant_type;
  if (grantType !== undefined && grantType !== 'authorization_code') {
    throw fail('invalid_grant_type', 'grant_type on an authorize request must be authorization_code');
  }
  if (!client.grantTypes.includes('authorization_code')) {
    throw fail('unauthorized_client', 'this client may not use the authorization code grant');
  }

  const scopeParam = p.scope;
  const asked = scopeParam ? [...new Set(scopeParam.split(' ').filter(Boolean))] : client.scopes;
  const scopes = withoutIgnoredScopes(asked, client);
  const allowed = scopesAllowed(client);
  const unknown = scopes.filter((s) => !allowed.includes(s));
  if (unknown.length > 0) throw fail('invalid_scope', `scope not allowed for this client: ${unknown.join(' ')}`);

  const codeChallenge = p.code_challenge;
  const method = p.code_challenge_method;
  if (codeChallenge === undefined && method !== undefined) {
    throw fail('invalid_request', 'code_challenge_method given without code_challenge');
  }
  if (codeChallenge !== undefined) {
    if (!pkceValue.test(codeChallenge)) throw fail('invalid_request', 'code_challenge must be 43 to 128 unreserved characters');
    if (method !== undefined && method !== 'S256' && method !== 'plain') {
      throw fail('invalid_request', 'code_challenge_method must be S256');
    }
    // RFC 7636: no method means plain. RFC 9700 2.1.1: plain only for a client registered for it.
    if ((method ?? 'plain') === 'plain' && !client.allowPlainPkce) {
      throw fail('invalid_request', 'code_challenge_method plain is not allowed for this client; use S256');
    }
  } else if (!client.confidential) {
    throw fail('invalid_request', 'a public client must use PKCE (code_challenge)');
  }

  const prompt = new Set((p.prompt ?? '').split(' ').filter(Boolean));
  for (const value of prompt) {
    if (!['none', 'login', 'consent', 'select_account'].includes(value)) throw fail('invalid_request', `prompt ${value} is not supported`);
  }
  if (prompt.has('none') && prompt.size > 1) throw fail('invalid_request', 'prompt=none cannot be combined with other values');

  let maxAge: number | undefined;
  const maxAgeParam = p.max_age;
  if (maxAgeParam !== undefined) {
    if (!/^\d{1,10}$/.test(maxAgeParam)) throw fail('invalid_request', 'max_age must be a whole number of seconds');
    maxAge = Number(maxAgeParam);
  }

  let resource: string | undefined;
  try {
    const resources = resourcesParam(p);
    resource = resources && joinResources(resources);
  } catch (err) {
    if (err instanceof OAuthError) throw fail(err.error, err.message);
    throw err;
  }

  // An unknown upstream is the client's mistake, told to the client like any other bad parameter.
  const idp = p.idp;
  if (idp !== undefined && !ctx.upstreams.find(idp)) throw fail('invalid_request', `idp ${idp} is not a configured identity provider`);

  const carried: Record<string, string> = {};
  for (const name of carriedNames) if (p[name] !== undefined) carried[name] = p[name]!;

  return {
    client,
    redirectUri,
    scopes,
    state,
    nonce: p.nonce,
    codeChallenge,
    codeChallengeMethod: codeChallenge ? ((method as 'S256' | 'plain' | undefined) ?? 'plain') : undefined,
    prompt,
    responseMode,
    maxAge,
    resource,
    idp,
    carried,
  };
}

/** Appends parameters to a redirect URI, keeping the registered URI's own query as it is. */
export function redirectWith(uri: string, params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.set(k, v);
  const q = query.toString();
  if (!q) return uri;
  return `${uri}${uri.includes('?') ? '&' : '?'}${q}`;
}
