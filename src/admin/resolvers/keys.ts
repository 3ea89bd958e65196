import type { PublishedKey } from '../../keys/signing-keys.ts';
import type { Resolvers, SigningAlgorithm, SigningKey } from '../generated/graphql.ts';

const iso = (ms: number) => new Date(ms).toISOString();

const toKey = (k: PublishedKey): SigningKey => ({
  kid: k.kid,
  algorithm: k.alg as SigningAlgorithm,
  createdAt: iso(k.createdAt),
  activatesAt: iso(k.activatesAt),
  retiredAt: k.retiredAt === null ? null : iso(k.retiredAt),
  signing: k.signing,
});

export const keyResolvers: Resolvers = {
  Query: {
    signingKeys: (_p, _a, { app }) => app.keys.list().map(toKey),
  },
  Mutation: {
    rotateSigningKeys: async (_p, { algorithms }, { app, admin, ip, requestId }) => {
      // Not in ctx.change's transaction: the keys are written through the app's own connection.
      const created = await app.keys.rotate(algorithms ?? undefined);
      await app.audit.record({
        kind: 'admin.change',
        actorUserId: admin.userId,
        actorClientId: admin.clientId,
        ip,
        requestId,
        details: { action: 'keys.rotate', kids: created.map((k) => k.kid) },
      });
      return created.map(toKey);
    },
  },
};
