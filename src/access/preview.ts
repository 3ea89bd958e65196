import type { Client } from '../clients/model.ts';
import { grantableScopes, scopesAllowed } from '../clients/scopes.ts';
import { NotFoundError } from '../errors/service.ts';
import type { ServiceProvider } from '../saml/model.ts';
import { samlRelease } from '../saml/release.ts';
import type { User } from '../users/model.ts';
import type { SamlAttribute } from './mappings.ts';
import { decideAccess } from './policy.ts';
import { applicationClaims, memberOf, userClaims } from './release.ts';

/** What an application would be told about a user now (docs/access-and-claims.md). */
export interface AccessPreview {
  allowed: boolean;
  reason: string;
  /** An OAuth client's: null for a SAML service provider. */
  idTokenClaims: Record<string, unknown> | null;
  userinfoClaims: Record<string, unknown> | null;
  accessTokenClaims: Record<string, unknown> | null;
  /** A SAML service provider's: null for an OAuth client. */
  samlNameId: string | null;
  samlAttributes: SamlAttribute[] | null;
}

export interface PreviewDeps {
  clients: { find(clientId: string): Promise<Client | undefined> };
  samlProviders: {
    find(entityId: string): Promise<ServiceProvider | undefined>;
    findById(id: string): Promise<ServiceProvider | undefined>;
  };
  users: { find(id: string): Promise<User | undefined> };
  /** Keys the pairwise `persistent` NameIDs, as for the real assertions. */
  pairwiseKey: Buffer;
}

/** A client's claims with every scope it may ask for that the user may be granted: the most it can be told. */
function clientPreview(client: Client, user: User): Pick<AccessPreview, 'idTokenClaims' | 'userinfoClaims' | 'accessTokenClaims'> {
  const scopes = grantableScopes(scopesAllowed(client), user);
  return {
    idTokenClaims: userClaims(client, user, scopes, 'id_token'),
    userinfoClaims: userClaims(client, user, scopes, 'userinfo'),
    accessTokenClaims: { ...applicationClaims(client, user, scopes, 'access_token'), sub: user.id },
  };
}

/**
 * The admin's preview: produced by the very functions that issue the tokens (`userClaims`,
 * `applicationClaims`) and the assertions (`samlRelease`), and decided by the one access decision, so
 * it shows what is issued. Nothing is issued or recorded.
 */
export const accessPreviews = (deps: PreviewDeps) => ({
  /**
   * `applicationId`: a client id, else a SAML service provider's entity ID or its id. An unknown
   * application or user is a NotFoundError naming the argument.
   */
  async of(applicationId: string, userId: string): Promise<AccessPreview> {
    const client = await deps.clients.find(applicationId);
    const sp = client ? undefined : ((await deps.samlProviders.find(applicationId)) ?? (await deps.samlProviders.findById(applicationId)));
    if (!client && !sp) throw new NotFoundError('applicationId', `no client or SAML service provider ${applicationId}`);
    const user = await deps.users.find(userId);
    if (!user) throw new NotFoundError('userId', `no user ${userId}`);
    const decision = decideAccess((client ?? sp)!.access, memberOf(user));
    if (client) return { ...decision, ...clientPreview(client, user), samlNameId: null, samlAttributes: null };
    const released = samlRelease(sp!, user, deps.pairwiseKey);
    return {
      ...decision,
      idTokenClaims: null,
      userinfoClaims: null,
      accessTokenClaims: null,
      samlNameId: released.nameId,
      samlAttributes: [...released.attributes],
    };
  },
});

export type AccessPreviews = ReturnType<typeof accessPreviews>;
