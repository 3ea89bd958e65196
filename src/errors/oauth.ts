/**
 * The one error type of the OAuth endpoints and the pages that share their handler (docs/endpoints.md "Error codes"). At the
 * bottom of the house: the HTTP layer serialises these, and any layer may throw them.
 */
/** The interface document's 19 codes, spelled as there (`exprise` included). */
export const documentCodes = [
  'empty_client_id',
  'empty_client_secret',
  'empty_redirect_uri',
  'empty_response_type',
  'empty_code',
  'app_unsupport_sso',
  'app_unsupport_oauth',
  'invalid_client_id',
  'invalid_response_type',
  'invalid_scope',
  'invalid_grant_type',
  'redirect_uri_mismatch',
  'unsupported_response_type',
  'invalid_code',
  'unsupported_refresh_token',
  'access_token_exprise',
  'invalid_access_token',
  'invalid_refresh_token',
  'refresh_token_exprise',
] as const;

/** RFC 6749 / 6750 / OIDC codes for the conditions the document has no code for. */
export const standardCodes = [
  'invalid_client',
  'invalid_grant',
  'invalid_request',
  'unauthorized_client',
  'access_denied',
  'temporarily_unavailable',
  'server_error',
  'login_required',
  'consent_required',
  'invalid_token',
  'unsupported_token_type',
  'unsupported_grant_type',
  // RFC 8707: a `resource` that is not an absolute URI without fragment, or not the one the code was issued for.
  'invalid_target',
  // docs/multi-factor-sign-in.md: the password grant of a user who signs in with a second factor, sent without it.
  'mfa_required',
  // RFC 8628 §3.5: the device code grant's answers while the user has not decided yet, and after.
  'authorization_pending',
  'slow_down',
  'expired_token',
] as const;

export type OAuthErrorCode = (typeof documentCodes)[number] | (typeof standardCodes)[number];

/**
 * The HTTP status that goes with each code (docs/endpoints.md "Error codes"): client authentication failures are 401, an
 * unreachable backend 503, anything unexpected 500; every other code is 400.
 */
const statusOf: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  invalid_client_id: 401,
  temporarily_unavailable: 503,
  server_error: 500,
};

/** The one error type of the OAuth endpoints: its fields are the wire format. */
export class OAuthError extends Error {
  readonly error: OAuthErrorCode;
  readonly status: number;
  /** Extra response headers (WWW-Authenticate, Retry-After). */
  readonly headers: Record<string, string>;

  constructor(error: OAuthErrorCode, description: string, status: number, headers: Record<string, string> = {}) {
    super(description);
    this.error = error;
    this.status = status;
    this.headers = headers;
  }

  toJSON(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.error, error_description: this.message };
  }
}

/** An OAuth error with the status its code carries. */
export const oauthError = (error: OAuthErrorCode, description: string, headers: Record<string, string> = {}): OAuthError =>
  new OAuthError(error, description, statusOf[error] ?? 400, headers);

/** A client authentication failure with HTTP Basic: 401 with the Basic challenge (RFC 6749 §5.2). */
export const basicAuthFailed = (description: string): OAuthError =>
  oauthError('invalid_client', description, { 'WWW-Authenticate': 'Basic realm="latchkey"' });

/** The brute-force policy holds the attempt back (docs/decisions.md): 429 with `Retry-After`. */
export const throttled = (retryAfter: number): OAuthError =>
  new OAuthError('invalid_grant', `too many failed attempts, retry after ${retryAfter} s`, 429, { 'Retry-After': String(retryAfter) });

/**
 * Every slot of a key of the attempt (its account's, its address's) is held by sign-ins in flight,
 * for longer than `throttle.slotWait` (docs/security.md): the server's load, so 503 `temporarily_unavailable` with `Retry-After`, never
 * the failed-attempts refusal.
 */
export const accountBusy = (retryAfter: number): OAuthError =>
  new OAuthError('temporarily_unavailable', `too many sign-ins are in progress, retry after ${retryAfter} s`, 503, {
    'Retry-After': String(retryAfter),
  });

/** RFC 6750 errors at a resource: the code in `WWW-Authenticate`; 400 for a malformed request, else 401. */
export const bearerError = (error: OAuthErrorCode, description: string): OAuthError =>
  new OAuthError(error, description, error === 'invalid_request' ? 400 : 401, {
    'WWW-Authenticate': `Bearer realm="latchkey", error="${error}", error_description="${description}"`,
  });

/** An identity backend that cannot answer (docs/identity-backends.md): 503, never counted as a failed login. */
export const backendUnavailable = (): OAuthError =>
  oauthError('temporarily_unavailable', 'the identity backend is unreachable; try again later');

/** The database cannot be reached (docs/decisions.md): 503, and the client may retry shortly. */
export const databaseUnavailable = (): OAuthError =>
  oauthError('temporarily_unavailable', 'the database is unreachable; try again later', { 'Retry-After': '5' });

/**
 * Which codes a client reads (docs/connect-an-application.md): `maxkey`, the interface document's (the default), or
 * `rfc6749`, the standard ones a stock OAuth library understands.
 */
export type ErrorCodeStyle = 'maxkey' | 'rfc6749';

/**
 * The RFC 6749 5.2 / 7636 4.6 / 6750 3.1 code for each document code that has one, at the token
 * endpoint. `empty_client_id` and `invalid_client_id` are listed for completeness: no client is known
 * when they are answered, so no style applies to them.
 */
const rfcCodes: Partial<Record<OAuthErrorCode, OAuthErrorCode>> = {
  empty_client_id: 'invalid_request',
  empty_client_secret: 'invalid_client',
  empty_redirect_uri: 'invalid_request',
  empty_code: 'invalid_request',
  invalid_client_id: 'invalid_client',
  invalid_grant_type: 'unsupported_grant_type',
  redirect_uri_mismatch: 'invalid_grant',
  invalid_code: 'invalid_grant',
  unsupported_refresh_token: 'unauthorized_client',
  app_unsupport_oauth: 'unauthorized_client',
  // At the device authorization endpoint: a client that may not use single sign-on gets no device code.
  app_unsupport_sso: 'unauthorized_client',
  invalid_refresh_token: 'invalid_grant',
  refresh_token_exprise: 'invalid_grant',
  access_token_exprise: 'invalid_token',
  invalid_access_token: 'invalid_token',
};

/** At a resource (me, userinfo) every refusal of the token is RFC 6750's `invalid_token`. */
const rfcBearerCodes: Partial<Record<OAuthErrorCode, OAuthErrorCode>> = {
  ...rfcCodes,
  app_unsupport_oauth: 'invalid_token',
};

/** At the authorize endpoint, whose errors go back to the client by redirect once it is known (RFC 6749 4.1.2.1). */
const rfcAuthorizeCodes: Partial<Record<OAuthErrorCode, OAuthErrorCode>> = {
  empty_response_type: 'invalid_request',
  invalid_response_type: 'unsupported_response_type',
  // grant_type is no parameter of an authorization request in RFC 6749.
  invalid_grant_type: 'invalid_request',
  app_unsupport_sso: 'unauthorized_client',
  app_unsupport_oauth: 'unauthorized_client',
};

/** The RFC code table, for docs/connect-an-application.md and the tests. */
export const rfc6749Codes: Readonly<Partial<Record<OAuthErrorCode, OAuthErrorCode>>> = rfcCodes;

/**
 * The one place a client's error-code style applies: an error answered to a request whose client
 * is known, in the codes that client reads. With `maxkey`, or anything not an OAuthError, nothing changes.
 */
export function forClient(err: unknown, style: ErrorCodeStyle, at: 'token' | 'authorize' = 'token'): unknown {
  if (style !== 'rfc6749' || !(err instanceof OAuthError)) return err;
  const bearer = /^Bearer /.test(err.headers['WWW-Authenticate'] ?? '');
  const mapped = (at === 'authorize' ? rfcAuthorizeCodes : bearer ? rfcBearerCodes : rfcCodes)[err.error];
  if (!mapped) return err;
  if (bearer) return bearerError(mapped, err.message);
  // A throttled answer keeps its 429 and Retry-After; otherwise the status goes with the new code.
  return new OAuthError(mapped, err.message, statusOf[mapped] ?? (err.status === 401 ? 400 : err.status), err.headers);
}
