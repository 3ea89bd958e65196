import type { Request } from 'express';
import type { Client } from '../../clients/queries.ts';
import type { AppContext } from '../../context.ts';
import { basicAuthFailed, oauthError } from '../../errors/oauth.ts';
import { param, type Params } from '../params.ts';

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
 * Client authentication, the first step of every token request (SPEC 7): `client_id` +
 * `client_secret` parameters or HTTP Basic, never both. Public clients present no secret.
 * `named` sees the named client before its credentials are checked, so that an error is answered
 * with that client's CORS headers (the browser app can then read why it failed).
 */
export async function authenticateClient(ctx: AppContext, req: Request, p: Params, named?: (client: Client) => void): Promise<Client> {
  const header = req.headers.authorization;
  const basic = header && /^basic /i.test(header) ? decodeBasic(header) : undefined;
  if (basic && p.client_secret !== undefined) {
    throw oauthError('invalid_request', 'client credentials given both in the Authorization header and the body');
  }
  if (basic && p.client_id !== undefined && p.client_id !== basic.id) {
    throw oauthError('invalid_request', 'client_id differs between the Authorization header and the body');
  }
  const clientId = basic?.id || param(p, 'client_id');
  const secret = basic ? basic.secret : param(p, 'client_secret');
  if (!clientId) throw oauthError('empty_client_id', 'client_id is required');

  const client = await ctx.clients.find(clientId);
  if (!client) throw oauthError('invalid_client_id', 'client_id is not a registered client');
  named?.(client);
  if (client.confidential) {
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
