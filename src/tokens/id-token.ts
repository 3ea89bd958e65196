import { type ReleasedUser, userClaims } from '../access/release.ts';
import type { Client } from '../clients/model.ts';
import { clock } from '../clock.ts';
import { sessionSid } from '../crypto/tokens.ts';
import type { Config } from '../config/schema.ts';
import { atHash, type SigningKeys } from '../keys/signing-keys.ts';
import type { Amr } from '../login/model.ts';

/** What an id_token says beyond the user's claims: the sign-in it stands for. */
export interface IdTokenSignIn {
  user: ReleasedUser;
  scopes: string[];
  /** When the user signed in (ms); a grant that does not know (none today) gets the time of issue. */
  authTime?: number | null;
  amr?: Amr[] | null;
  nonce?: string | null;
  sessionId?: string | null;
}

/**
 * The OIDC id_token issued with an access token: the claims its scopes allow and the client's own
 * (its roles and mapped claims aimed at the id_token, docs/access-and-claims.md), `at_hash` binding it
 * to that access token, and the sign-in's `auth_time`, `amr`, `nonce` and `sid`, which no mapping
 * replaces. Signed with the client's registered algorithm.
 */
export function signIdToken(keys: SigningKeys, config: Config, client: Client, accessToken: string, s: IdTokenSignIn): Promise<string> {
  const now = Math.floor(clock.now() / 1000);
  return keys.sign(
    {
      ...userClaims(client, s.user, s.scopes, 'id_token'),
      iss: config.publicUrl,
      aud: client.clientId,
      azp: client.clientId,
      iat: now,
      exp: now + config.tokens.idTokenTtl,
      auth_time: s.authTime ? Math.floor(s.authTime / 1000) : now,
      ...(s.amr?.length ? { amr: s.amr } : {}),
      at_hash: atHash(accessToken),
      ...(s.nonce ? { nonce: s.nonce } : {}),
      ...(s.sessionId ? { sid: sessionSid(s.sessionId) } : {}),
    },
    client.idTokenAlg,
  );
}
