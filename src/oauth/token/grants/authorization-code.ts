import { sameRedirectUri } from '../../../clients/redirect-match.ts';
import { createHash } from 'node:crypto';
import { safeEqual } from '../../../crypto/tokens.ts';
import { oauthError } from '../../../errors/oauth.ts';
import { resourcesParam } from '../../resources-param.ts';
import { auditTrail, type Grant } from '../grant.ts';
import { outsideGrant, settledResources } from '../resources.ts';
import { clientApplication } from '../../../access/service.ts';
import { originOf } from '../../../http/origin.ts';

const verifierPattern = /^[A-Za-z0-9._~-]{43,128}$/;

function pkceMatches(method: string, challenge: string, verifier: string): boolean {
  const derived = method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
  return safeEqual(derived, challenge);
}

/** The code in `code` or `tokencode` (the document names both), its redirect URI and PKCE verifier. */
export const authorizationCodeGrant: Grant = async (ctx, req, p, client) => {
  const code = p.code ?? p.tokencode;
  if (!code) throw oauthError('empty_code', 'code is required');
  const redirectUri = p.redirect_uri;
  if (!redirectUri) throw oauthError('empty_redirect_uri', 'redirect_uri is required');
  const resources = resourcesParam(p);

  const row = await ctx.tokens.findCode(code, client.clientId, auditTrail(ctx, req));
  // Everything a replayed code issued is revoked already (RFC 6749 §4.1.2), and the replay audited.
  if (row === 'replayed') throw oauthError('invalid_code', 'the code was already used');
  if (row === 'invalid') throw oauthError('invalid_code', 'the code is invalid');
  if (row === 'expired') throw oauthError('invalid_code', 'the code has expired');
  // A failed exchange uses the code up, as a successful one does.
  const refuse = async (error: Parameters<typeof oauthError>[0], description: string) => {
    await ctx.tokens.useUpCode(row);
    return oauthError(error, description);
  };
  if (row.clientId !== client.clientId) throw await refuse('invalid_code', 'the code was issued to another client');
  if (!sameRedirectUri(row.redirectUri, redirectUri))
    throw await refuse('redirect_uri_mismatch', 'redirect_uri differs from the authorize request');
  // RFC 8707: the code is for the resources named at authorize; the token request may name only those.
  const other = outsideGrant(row.resource, resources);
  if (other.length > 0) throw await refuse('invalid_target', `resource not among those the code was issued for: ${other.join(' ')}`);

  const verifier = p.code_verifier;
  if (row.codeChallenge) {
    if (!verifier || !verifierPattern.test(verifier)) throw await refuse('invalid_code', 'code_verifier is missing or malformed');
    if (!pkceMatches(row.codeChallengeMethod ?? 'plain', row.codeChallenge, verifier)) {
      throw await refuse('invalid_code', 'code_verifier does not match the code_challenge');
    }
  } else if (verifier) {
    throw await refuse('invalid_code', 'code_verifier given for a code issued without code_challenge');
  }
  // docs/decisions.md: sessions end with the credentials; a code of an ended session, or from before the
  // user's credentials changed, gets nothing.
  if (row.signInEnded) throw await refuse('invalid_grant', 'the sign-in this code was issued for has ended');
  // docs/decisions.md: a user disabled (or deleted) since the code was issued gets nothing for it. The user
  // was read with the code (one round trip, not two).
  const { user } = row;
  if (!user || user.disabled) throw await refuse('invalid_grant', 'the user is disabled or no longer exists');
  // docs/access-and-claims.md: a user the application's policy no longer admits gets nothing for a code
  // issued before the change.
  const access = await ctx.access.check(clientApplication(client), user, originOf(req));
  if (!access.allowed) throw await refuse('invalid_grant', 'the user may not use this application');

  return {
    userId: row.userId,
    user,
    scopes: row.scope.split(' ').filter(Boolean),
    from: { code: row },
    sessionId: row.sessionId,
    authTime: row.authTime,
    amr: row.amr,
    nonce: row.nonce,
    ...settledResources(row.resource, resources),
  };
};
