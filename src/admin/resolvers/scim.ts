import type { ScimToken as Kept } from '../../scim/model.ts';
import type { Resolvers, ScimToken } from '../generated/graphql.ts';

const iso = (ms: number) => new Date(ms).toISOString();

const toToken = (t: Kept): ScimToken => ({
  id: t.id,
  backend: t.backend,
  description: t.description || null,
  createdBy: t.createdBy,
  createdAt: iso(t.createdAt),
  lastUsedAt: t.lastUsedAt === null ? null : iso(t.lastUsedAt),
});

/**
 * SCIM tokens (docs/scim-provisioning.md "Tokens"): who may make or revoke one is the SDL's `@requires`
 * (checked once, in src/admin/permissions.ts); every rule and audit event is the token service's, the
 * resolvers only translate.
 */
export const scimResolvers: Resolvers = {
  Query: {
    scimTokens: async (_p, _a, { app }) => (await app.scimTokens.list()).map(toToken),
  },
  Mutation: {
    createScimToken: async (_p, { backend, description }, { app, actor }) => {
      const made = await app.scimTokens.create(backend, description, actor);
      return { token: made.token, scimToken: toToken(made.scimToken) };
    },
    revokeScimToken: (_p, { id }, { app, actor }) => app.scimTokens.revoke(id, actor),
  },
};
