import type { Request } from 'express';
import { createLocalJWKSet, decodeJwt, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { ASSERTION_ALGS, methodsOf } from '../../clients/auth-method.ts';
import type { Client } from '../../clients/model.ts';
import type { AppContext } from '../../context.ts';
import { oauthError, type OAuthError } from '../../errors/oauth.ts';
import { paths } from '../../paths.ts';
import { clock } from '../../clock.ts';

export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** RFC 7523 3: a short-lived assertion; we remember its jti until then, so no longer than this. */
const MAX_LIFETIME_S = 300;

/** The client id an assertion names (unverified: only to find whose keys verify it). */
export function assertionIssuer(ctx: AppContext, assertion: string): string {
  try {
    const iss = decodeJwt(assertion).iss;
    // A NUL would make PostgreSQL fail the lookup; no client id is longer than 128.
    if (typeof iss === 'string' && iss && iss.length <= 128 && !iss.includes('\0')) return iss;
  } catch {
    // fall through to the one answer for any assertion that cannot be read
  }
  ctx.logger.warn({ reason: 'not a JWT naming its client in iss' }, 'client assertion refused');
  throw oauthError('invalid_client', 'client_assertion is not a JWT naming its client in iss');
}

/**
 * Verifies a client assertion (RFC 7523 3, OIDC Core 9) for `client`: signed by its registered keys
 * (private_key_jwt) or its secret (client_secret_jwt), iss = sub = its id, aud this issuer, the token
 * endpoint or the endpoint called, exp at most 5 minutes ahead, a jti never seen before. Any failure
 * (a jwksUri down, slow, too large, or failed within the last 30 s included) is invalid_client and
 * one log line, whose error is fixed words (src/outbound/), never what the jwksUri answered.
 */
export async function verifyClientAssertion(ctx: AppContext, req: Request, client: Client, assertion: string): Promise<void> {
  const fail = (why: string, err?: unknown): OAuthError => {
    ctx.logger.warn(
      { clientId: client.clientId, reason: why, error: err instanceof Error ? err.message : undefined },
      'client assertion refused',
    );
    return oauthError('invalid_client', 'client authentication failed');
  };
  const method = methodsOf(client)[0];
  let key: JWTVerifyGetKey;
  let algorithms: string[];
  if (method === 'private_key_jwt' && methodsOf(client).length === 1) {
    algorithms = [...ASSERTION_ALGS];
    if (client.jwks) key = createLocalJWKSet(JSON.parse(client.jwks));
    else if (client.jwksUri) key = ctx.clientKeys.keysOf(client.clientId, client.jwksUri);
    else throw fail('no keys registered');
  } else if (method === 'client_secret_jwt') {
    const secret = ctx.clients.jwtSecret(client);
    if (!secret) throw fail('no secret stored: rotate the client secret');
    algorithms = ['HS256'];
    const bytes = new TextEncoder().encode(secret);
    key = async () => bytes;
  } else {
    throw fail(`registered for ${methodsOf(client).join(' or ')}, not a client assertion`);
  }
  const base = ctx.config.publicUrl;
  const audience = [base, base + paths.token[0], base + req.baseUrl + req.path];
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(assertion, key, {
      algorithms,
      issuer: client.clientId,
      subject: client.clientId,
      audience,
      requiredClaims: ['exp', 'jti'],
      clockTolerance: 5,
      currentDate: new Date(clock.now()),
    }));
  } catch (err) {
    throw fail('assertion did not verify', err);
  }
  const nowS = Math.floor(clock.now() / 1000);
  if (payload.exp! > nowS + MAX_LIFETIME_S + 5) throw fail('exp more than 5 minutes ahead');
  const jti = payload.jti!;
  if (typeof jti !== 'string' || !jti || jti.length > 256 || jti.includes('\0')) throw fail('jti missing, too long or with a NUL');
  if (!(await ctx.clients.useAssertionJti(client.clientId, jti, (payload.exp! + 5) * 1000))) throw fail('jti replayed');
}
