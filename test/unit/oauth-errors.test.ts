import { describe, expect, it } from '@jest/globals';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { DatabaseOutage } from '../../src/db/outage.ts';
import {
  accountBusy,
  backendUnavailable,
  basicAuthFailed,
  bearerError,
  databaseUnavailable,
  documentCodes,
  forClient,
  OAuthError,
  oauthError,
  rfc6749Codes,
  standardCodes,
  throttled,
  type OAuthErrorCode,
} from '../../src/errors/oauth.ts';
import { errorHandler } from '../../src/http/errors.ts';

const allCodes: OAuthErrorCode[] = [...documentCodes, ...standardCodes];

/** `forClient` for an rfc6749 client, as an OAuthError. */
const rfc = (err: OAuthError, at: 'token' | 'authorize' = 'token') => forClient(err, 'rfc6749', at) as OAuthError;

describe('oauthError: the status goes with the code (docs/endpoints.md "Error codes")', () => {
  it('client authentication failures are 401, an unreachable backend 503, anything unexpected 500', () => {
    expect(oauthError('invalid_client', 'd').status).toBe(401);
    expect(oauthError('invalid_client_id', 'd').status).toBe(401);
    expect(oauthError('temporarily_unavailable', 'd').status).toBe(503);
    expect(oauthError('server_error', 'd').status).toBe(500);
  });

  it('every other code is 400', () => {
    const special = new Set(['invalid_client', 'invalid_client_id', 'temporarily_unavailable', 'server_error']);
    const others = allCodes.filter((code) => !special.has(code));
    expect(others).toHaveLength(32);
    for (const code of others) expect([code, oauthError(code, 'd').status]).toEqual([code, 400]);
  });

  it('the interface document has its 19 codes, spelled as there', () => {
    expect(documentCodes).toHaveLength(19);
    expect(documentCodes).toContain('access_token_exprise');
    expect(documentCodes).toContain('refresh_token_exprise');
  });

  it('the wire format is the code and the description; headers are none unless given', () => {
    const err = oauthError('invalid_scope', 'scope not allowed: admin');
    expect(err).toBeInstanceOf(Error);
    expect(JSON.parse(JSON.stringify(err))).toEqual({ error: 'invalid_scope', error_description: 'scope not allowed: admin' });
    expect(err.headers).toEqual({});
  });
});

describe('the error factories', () => {
  it('basicAuthFailed: 401 invalid_client with the Basic challenge', () => {
    const err = basicAuthFailed('bad secret');
    expect([err.error, err.status, err.message]).toEqual(['invalid_client', 401, 'bad secret']);
    expect(err.headers).toEqual({ 'WWW-Authenticate': 'Basic realm="latchkey"' });
  });

  it('throttled: 429 invalid_grant with Retry-After in seconds', () => {
    const err = throttled(42);
    expect([err.error, err.status]).toEqual(['invalid_grant', 429]);
    expect(err.headers).toEqual({ 'Retry-After': '42' });
    expect(err.message).toBe('too many failed attempts, retry after 42 s');
  });

  it('accountBusy: a load refusal, 503 temporarily_unavailable with Retry-After, never the failed-attempts words', () => {
    const err = accountBusy(1);
    expect([err.error, err.status, err.headers]).toEqual(['temporarily_unavailable', 503, { 'Retry-After': '1' }]);
    expect(err.message).toBe('too many sign-ins are in progress, retry after 1 s');
  });

  it('bearerError: the code in WWW-Authenticate; 400 for a malformed request, else 401', () => {
    const err = bearerError('invalid_token', 'the access token expired');
    expect(err.status).toBe(401);
    expect(err.headers).toEqual({
      'WWW-Authenticate': 'Bearer realm="latchkey", error="invalid_token", error_description="the access token expired"',
    });
    expect(bearerError('invalid_request', 'two tokens').status).toBe(400);
    expect(bearerError('invalid_access_token', 'd').status).toBe(401);
  });

  it('backendUnavailable: 503 without Retry-After; databaseUnavailable: 503 with Retry-After 5', () => {
    expect([backendUnavailable().error, backendUnavailable().status, backendUnavailable().headers]).toEqual([
      'temporarily_unavailable',
      503,
      {},
    ]);
    expect([databaseUnavailable().error, databaseUnavailable().status, databaseUnavailable().headers]).toEqual([
      'temporarily_unavailable',
      503,
      { 'Retry-After': '5' },
    ]);
  });
});

describe('forClient: the codes each client style reads (docs/connect-an-application.md)', () => {
  it('a maxkey client (the default) gets the interface document’s codes, the very same error', () => {
    const err = oauthError('invalid_code', 'd');
    expect(forClient(err, 'maxkey')).toBe(err);
    expect(forClient(err, 'maxkey', 'authorize')).toBe(err);
  });

  it('at the token endpoint an rfc6749 client gets the RFC 6749 code, the same description and the new code’s status', () => {
    const cases: Array<[OAuthErrorCode, OAuthErrorCode, number]> = [
      ['invalid_code', 'invalid_grant', 400],
      ['redirect_uri_mismatch', 'invalid_grant', 400],
      ['invalid_refresh_token', 'invalid_grant', 400],
      ['refresh_token_exprise', 'invalid_grant', 400],
      ['invalid_grant_type', 'unsupported_grant_type', 400],
      ['unsupported_refresh_token', 'unauthorized_client', 400],
      ['app_unsupport_oauth', 'unauthorized_client', 400],
      ['app_unsupport_sso', 'unauthorized_client', 400],
      ['empty_code', 'invalid_request', 400],
      ['empty_redirect_uri', 'invalid_request', 400],
      ['empty_client_secret', 'invalid_client', 401],
      ['invalid_client_id', 'invalid_client', 401],
    ];
    for (const [document, standard, status] of cases) {
      const mapped = rfc(oauthError(document, `about ${document}`));
      expect([document, mapped.error, mapped.status, mapped.message]).toEqual([document, standard, status, `about ${document}`]);
    }
  });

  it('a code RFC 6749 shares, or one without an RFC equivalent, is left as it is', () => {
    for (const code of ['invalid_grant', 'invalid_scope', 'mfa_required', 'invalid_response_type'] as const) {
      const err = oauthError(code, 'd');
      expect(rfc(err)).toBe(err);
    }
  });

  it('a throttled answer keeps its 429 and Retry-After under its new code', () => {
    const mapped = rfc(new OAuthError('invalid_code', 'd', 429, { 'Retry-After': '9' }));
    expect([mapped.error, mapped.status, mapped.headers]).toEqual(['invalid_grant', 429, { 'Retry-After': '9' }]);
  });

  it('a 401 whose new code is no authentication failure becomes 400', () => {
    expect(rfc(new OAuthError('invalid_code', 'd', 401)).status).toBe(400);
  });

  it('at a resource (a Bearer challenge) every refusal of the token is invalid_token, challenge included', () => {
    for (const code of ['invalid_access_token', 'access_token_exprise', 'app_unsupport_oauth'] as const) {
      const mapped = rfc(bearerError(code, 'no good'));
      expect([code, mapped.error, mapped.status]).toEqual([code, 'invalid_token', 401]);
      expect(mapped.headers['WWW-Authenticate']).toBe('Bearer realm="latchkey", error="invalid_token", error_description="no good"');
    }
  });

  it('at the authorize endpoint the authorization request’s own codes (RFC 6749 4.1.2.1)', () => {
    const cases: Array<[OAuthErrorCode, OAuthErrorCode]> = [
      ['empty_response_type', 'invalid_request'],
      ['invalid_response_type', 'unsupported_response_type'],
      ['invalid_grant_type', 'invalid_request'],
      ['app_unsupport_sso', 'unauthorized_client'],
      ['app_unsupport_oauth', 'unauthorized_client'],
    ];
    for (const [document, standard] of cases)
      expect([document, rfc(oauthError(document, 'd'), 'authorize').error]).toEqual([document, standard]);
    // The token endpoint's table does not apply there.
    const code = oauthError('invalid_code', 'd');
    expect(rfc(code, 'authorize')).toBe(code);
  });

  it('maps document codes only, and only to standard codes', () => {
    for (const [from, to] of Object.entries(rfc6749Codes)) {
      expect(documentCodes).toContain(from);
      expect(standardCodes).toContain(to);
    }
  });

  it('anything not an OAuthError is left alone, for the error handler to answer server_error', () => {
    const fault = new TypeError('cannot read properties of undefined');
    expect(forClient(fault, 'rfc6749')).toBe(fault);
  });
});

describe('errorHandler: how an error becomes the JSON answer', () => {
  /** A response that records what was sent; a logger and an outage tracker that record what they were told. */
  function run(err: unknown) {
    const sent: { status?: number; headers: Record<string, string>; body?: unknown } = { headers: {} };
    const res = {
      headersSent: false,
      setHeader(name: string, value: string) {
        sent.headers[name] = value;
      },
      status(status: number) {
        sent.status = status;
        return this;
      },
      set(headers: Record<string, string>) {
        Object.assign(sent.headers, headers);
        return this;
      },
      json(body: unknown) {
        sent.body = body;
        return this;
      },
    };
    const logged: string[] = [];
    const outages: unknown[] = [];
    const logger = { error: (_: unknown, message: string) => logged.push(message) } as unknown as Logger;
    const outage = { report: (e: unknown) => outages.push(e) } as unknown as DatabaseOutage;
    const req = { id: 'req-1', path: '/oauth/v20/token' } as unknown as Request;
    errorHandler(logger, outage)(err, req, res as unknown as Response, () => {});
    return { sent, logged, outages };
  }

  it('an OAuthError is answered with its status, headers and wire format', () => {
    const { sent, logged } = run(throttled(3));
    expect(sent).toEqual({
      status: 429,
      headers: { 'Cache-Control': 'no-store', 'Retry-After': '3' },
      body: { error: 'invalid_grant', error_description: 'too many failed attempts, retry after 3 s' },
    });
    expect(logged).toEqual([]);
  });

  it('a fault that is not exposed is logged and answered 500 server_error with the request id, never its message', () => {
    const { sent, logged } = run(new Error('secret internals at line 42'));
    expect(sent.status).toBe(500);
    expect(sent.body).toEqual({ error: 'server_error', error_description: 'unexpected error (request id req-1)' });
    expect(JSON.stringify(sent.body)).not.toContain('secret internals');
    expect(logged).toEqual(['unexpected error']);
  });

  it('an unreachable database is 503 temporarily_unavailable with Retry-After, reported to the outage tracker', () => {
    const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const { sent, outages } = run(down);
    expect([sent.status, sent.headers['Retry-After'], (sent.body as { error: string }).error]).toEqual([
      503,
      '5',
      'temporarily_unavailable',
    ]);
    expect(outages).toEqual([down]);
  });

  it('a body the parser refused is invalid_request with its status', () => {
    const { sent } = run(Object.assign(new Error('too large'), { status: 413, type: 'entity.too.large' }));
    expect(sent).toMatchObject({ status: 413, body: { error: 'invalid_request', error_description: 'the request body is too large' } });
  });
});
