/**
 * The one error type of the OAuth endpoints and the pages that share their handler (SPEC 2.4, 7). At the
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
  // SPEC 8: the password grant of a user who signs in with a second factor, sent without it.
  'mfa_required',
] as const;

export type OAuthErrorCode = (typeof documentCodes)[number] | (typeof standardCodes)[number];

/**
 * The HTTP status that goes with each code (SPEC 2.4, 7): client authentication failures are 401, an
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
export const basicAuthFailed = (description: string): OAuthError => oauthError('invalid_client', description, { 'WWW-Authenticate': 'Basic realm="latchkey"' });

/** The brute-force policy holds the attempt back (SPEC 7): 429 with `Retry-After`. */
export const throttled = (retryAfter: number): OAuthError =>
  new OAuthError('invalid_grant', `too many failed attempts, retry after ${retryAfter} s`, 429, { 'Retry-After': String(retryAfter) });

/** RFC 6750 errors at a resource: the code in `WWW-Authenticate`; 400 for a malformed request, else 401. */
export const bearerError = (error: OAuthErrorCode, description: string): OAuthError =>
  new OAuthError(error, description, error === 'invalid_request' ? 400 : 401, {
    'WWW-Authenticate': `Bearer realm="latchkey", error="${error}", error_description="${description}"`,
  });

/** An identity backend that cannot answer (SPEC 4): 503, never counted as a failed login. */
export const backendUnavailable = (): OAuthError => oauthError('temporarily_unavailable', 'the identity backend is unreachable; try again later');

/** The database cannot be reached (SPEC 7): 503, and the client may retry shortly. */
export const databaseUnavailable = (): OAuthError =>
  oauthError('temporarily_unavailable', 'the database is unreachable; try again later', { 'Retry-After': '5' });
