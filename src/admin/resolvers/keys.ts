import type { SigningKeyInfo } from '../../keys/signing-keys.ts';
import type { Resolvers, SigningAlgorithm, SigningKey } from '../generated/graphql.ts';

const iso = (ms: number) => new Date(ms).toISOString();

const toKey = (k: SigningKeyInfo): SigningKey => ({
  kid: k.kid,
  algorithm: k.alg as SigningAlgorithm,
  createdAt: iso(k.createdAt),
  activatesAt: iso(k.activatesAt),
  retiredAt: k.retiredAt === null ? null : iso(k.retiredAt),
  signing: false,
});

/** Marks the key of each algorithm that signs now (the newest whose time has come, not retired). */
function withSigning(keys: SigningKeyInfo[], now = Date.now()): SigningKey[] {
  const signing = new Set<string>();
  for (const alg of new Set(keys.map((k) => k.alg))) {
    const current = keys.filter((k) => k.alg === alg && k.activatesAt <= now && (k.retiredAt === null || k.retiredAt > now)).at(-1);
    if (current) signing.add(current.kid);
  }
  return keys.map((k) => ({ ...toKey(k), signing: signing.has(k.kid) }));
}

export const keyResolvers: Resolvers = {
  Query: {
    signingKeys: (_p, _a, { app }) => withSigning(app.keys.list()),
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
      const fresh = new Set(created.map((k) => k.kid));
      return withSigning(app.keys.list()).filter((k) => fresh.has(k.kid));
    },
  },
};
