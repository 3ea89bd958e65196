import type { Request } from 'express';
import type { Client } from '../../clients/model.ts';
import type { AppContext } from '../../context.ts';
import { basicAuthFailed, oauthError } from '../../errors/oauth.ts';
import type { Params } from '../../http/params.ts';
import { methodsOf } from '../../clients/auth-method.ts';
import { assertionIssuer, JWT_BEARER, verifyClientAssertion } from './client-assertion.ts';

/** RFC 6749 §2.3.1: Basic credentials are form-urlencoded before base64. */
function decodeBasic(header: string): { id: string; secret: string } {
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw basicAuthFailed('malformed Basic credentials');
  const unform = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      throw basicAuthFailed('malformed Basic credentials');
    }
  };
  const id = unform(decoded.slice(0, colon));
  if (id.includes('\0') || id.length > 256) throw basicAuthFailed('malformed Basic credentials');
  return { id, secret: unform(decoded.slice(colon + 1)) };
}

/**
 * Client authentication, the first step of every token request (docs/decisions.md): `client_id` +
 * `client_secret` parameters or HTTP Basic, never both, or a signed client assertion (RFC 7523);
 * each client only the way it is registered for (docs/connect-an-application.md). Public clients present no secret.
 * `named` sees the named client before its credentials are checked, so that an error is answered
 * with that client's CORS headers (the browser app can then read why it failed). `find` reads the
 * client: its row as it is now, unless the caller checks the version at its write (client-endpoint.ts).
 */
export async function authenticateClient(
  ctx: AppContext,
  req: Request,
  p: Params,
  named?: (client: Client) => void,
  find: (clientId: string) => Promise<Client | undefined> = ctx.clients.find,
): Promise<Client> {
  if (p.client_assertion_type !== undefined || p.client_assertion !== undefined) return byAssertion(ctx, req, p, named);
  const header = req.headers.authorization;
  const basic = header && /^basic /i.test(header) ? decodeBasic(header) : undefined;
  if (basic && p.client_secret !== undefined) {
    throw oauthError('invalid_request', 'client credentials given both in the Authorization header and the body');
  }
  if (basic && p.client_id !== undefined && p.client_id !== basic.id) {
    throw oauthError('invalid_request', 'client_id differs between the Authorization header and the body');
  }
  const clientId = basic?.id || p.client_id;
  const secret = basic ? basic.secret : p.client_secret;
  if (!clientId) throw oauthError('empty_client_id', 'client_id is required');

  const client = await find(clientId);
  if (!client) throw oauthError('invalid_client_id', 'client_id is not a registered client');
  named?.(client);
  if (client.confidential) {
    const allowed = methodsOf(client);
    if (!allowed.includes(basic ? 'client_secret_basic' : 'client_secret_post')) {
      throw oauthError('invalid_client', `this client authenticates with ${allowed.join(' or ')}`);
    }
    if (!secret) throw oauthError('empty_client_secret', 'client_secret is required');
    if (!ctx.clients.secretMatches(client, secret)) {
      throw basic ? basicAuthFailed('client authentication failed') : oauthError('invalid_client', 'client authentication failed');
    }
  } else if (secret) {
    throw oauthError('invalid_client', 'a public client has no secret');
  }
  if (!client.oauthEnabled) throw oauthError('app_unsupport_oauth', 'this application may not use OAuth');
  return client;
}

/** client_assertion_type + client_assertion, never with another credential; client_id optional. */
async function byAssertion(ctx: AppContext, req: Request, p: Params, named?: (client: Client) => void): Promise<Client> {
  if (req.headers.authorization && /^basic /i.test(req.headers.authorization))
    throw oauthError('invalid_request', 'a client assertion and Basic credentials together');
  if (p.client_secret !== undefined) throw oauthError('invalid_request', 'a client assertion and client_secret together');
  if (p.client_assertion_type !== JWT_BEARER) throw oauthError('invalid_client', `client_assertion_type must be ${JWT_BEARER}`);
  const assertion = p.client_assertion;
  if (!assertion) throw oauthError('invalid_client', 'client_assertion is required');
  const clientId = assertionIssuer(ctx, assertion);
  if (p.client_id !== undefined && p.client_id !== clientId)
    throw oauthError('invalid_client', 'client_id differs from the assertion issuer');
  const client = await ctx.clients.find(clientId);
  if (!client) {
    ctx.logger.warn({ clientId, reason: 'no such client' }, 'client assertion refused');
    throw oauthError('invalid_client', 'client authentication failed');
  }
  named?.(client);
  await verifyClientAssertion(ctx, req, client, assertion);
  if (!client.oauthEnabled) throw oauthError('app_unsupport_oauth', 'this application may not use OAuth');
  return client;
}
