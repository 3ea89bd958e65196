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
] as const;

export type OAuthErrorCode = (typeof documentCodes)[number] | (typeof standardCodes)[number];

/** The one error type of the OAuth endpoints: its fields are the wire format. */
export class OAuthError extends Error {
  readonly error: OAuthErrorCode;
  readonly status: number;
  /** Extra response headers (WWW-Authenticate, Retry-After). */
  readonly headers: Record<string, string>;

  constructor(error: OAuthErrorCode, description: string, status = 400, headers: Record<string, string> = {}) {
    super(description);
    this.error = error;
    this.status = status;
    this.headers = headers;
  }

  toJSON(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.error, error_description: this.message };
  }
}

/** An identity backend that cannot answer (SPEC 4): 503, never counted as a failed login. */
export const backendUnavailable = (): OAuthError =>
  new OAuthError('temporarily_unavailable', 'the identity backend is unreachable; try again later', 503);

export const oauthError = (
  error: OAuthErrorCode,
  description: string,
  status = 400,
  headers: Record<string, string> = {},
): OAuthError => new OAuthError(error, description, status, headers);
