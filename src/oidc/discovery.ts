import type { RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { paths } from '../paths.ts';
import { ASSERTION_ALGS } from '../clients/auth-method.ts';

const CLIENT_METHODS = ['client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt'];
/** HS256: client_secret_jwt; the others: private_key_jwt (RFC 7523, docs/connect-an-application.md). */
const CLIENT_ALGS = ['HS256', ...ASSERTION_ALGS];

/** OpenID Provider / RFC 8414 metadata: built once, it only names what this server really does. */
export function discoveryHandler(ctx: AppContext): RequestHandler {
  const base = ctx.config.publicUrl;
  const metadata = JSON.stringify({
    issuer: base,
    authorization_endpoint: base + paths.authorize[0],
    token_endpoint: base + paths.token[0],
    userinfo_endpoint: base + paths.userinfo[0],
    jwks_uri: base + paths.jwks,
    introspection_endpoint: base + paths.introspect,
    revocation_endpoint: base + paths.revoke,
    end_session_endpoint: base + paths.logout,
    introspection_endpoint_auth_methods_supported: CLIENT_METHODS,
    introspection_endpoint_auth_signing_alg_values_supported: CLIENT_ALGS,
    revocation_endpoint_auth_methods_supported: [...CLIENT_METHODS, 'none'],
    revocation_endpoint_auth_signing_alg_values_supported: CLIENT_ALGS,
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    device_authorization_endpoint: base + paths.deviceAuthorization,
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'form_post'],
    authorization_response_iss_parameter_supported: true,
    grant_types_supported: [
      'authorization_code',
      'password',
      'refresh_token',
      'client_credentials',
      'urn:ietf:params:oauth:grant-type:device_code',
    ],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [...ctx.keys.algs],
    scopes_supported: ['openid', 'profile', 'email', 'groups', 'offline_access', 'admin'],
    claims_supported: [
      'sub',
      'iss',
      'aud',
      'exp',
      'iat',
      'auth_time',
      'nonce',
      'at_hash',
      'sid',
      'name',
      'preferred_username',
      'email',
      'email_verified',
      'groups',
    ],
    token_endpoint_auth_methods_supported: [...CLIENT_METHODS, 'none'],
    token_endpoint_auth_signing_alg_values_supported: CLIENT_ALGS,
    // plain is for the few clients registered for it (RFC 9700 2.1.1); a library must pick S256.
    code_challenge_methods_supported: ['S256'],
    prompt_values_supported: ['none', 'login', 'consent'],
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
  });
  return (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.type('json').send(metadata);
  };
}

/** The published keys; re-serialised only when a reload or rotation changed them. */
export function jwksHandler(ctx: AppContext): RequestHandler {
  let source = ctx.keys.jwks;
  let body = JSON.stringify(source);
  return (_req, res) => {
    if (ctx.keys.jwks !== source) {
      source = ctx.keys.jwks;
      body = JSON.stringify(source);
    }
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.type('application/jwk-set+json').send(body);
  };
}
