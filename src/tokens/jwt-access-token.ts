import { randomUUID } from 'node:crypto';
import type { SigningKeys } from '../keys/signing-keys.ts';
import { clock } from '../clock.ts';

/**
 * A JWT access token lives at most this long (seconds), whatever the client's lifetime: a resource
 * server that validates it locally never asks whether it was revoked. Retired signing keys stay
 * published at least this long.
 */
export const JWT_ACCESS_TOKEN_MAX_TTL = 24 * 3600;

export interface JwtAccessTokenClaims {
  issuer: string;
  clientId: string;
  /** RFC 8707: the resource(s) the token is for; never the client id (that is an id_token's `aud`). */
  audience: string | string[];
  userId: string | null;
  scope: string;
  ttl: number;
  authTime?: number | null;
  /**
   * The client's own claims for this user (its roles and the mappings aimed at access tokens,
   * docs/access-and-claims.md); the protocol's claims above always win over them.
   */
  application?: Readonly<Record<string, unknown>>;
}

/**
 * An access token as a signed JWT (RFC 9068): `typ: at+jwt`, RS256, `sub` the user (or the client for
 * client_credentials), `aud` the resource it is for (never the client: an id_token, whose `aud` is the
 * client, cannot pass for one), `client_id` the client it was issued to, a `jti`, and the client's own
 * claims of its user. Latchkey stores its hash like an opaque token's, so me, userinfo, introspection
 * and revocation treat both alike.
 */
export function signJwtAccessToken(keys: SigningKeys, c: JwtAccessTokenClaims): Promise<string> {
  const now = Math.floor(clock.now() / 1000);
  return keys.sign(
    {
      ...c.application,
      iss: c.issuer,
      sub: c.userId ?? c.clientId,
      aud: c.audience,
      client_id: c.clientId,
      scope: c.scope,
      iat: now,
      exp: now + c.ttl,
      jti: randomUUID(),
      ...(c.authTime ? { auth_time: Math.floor(c.authTime / 1000) } : {}),
    },
    'RS256',
    'at+jwt',
  );
}

/**
 * Whom an access token is for when neither the request (RFC 8707 `resource`) nor the client
 * (`defaultAudience`) says: this server's userinfo endpoint, the resource every token is good for.
 */
export const issuerAudience = (publicUrl: string): string => `${publicUrl}/connect/v10/userinfo`;
