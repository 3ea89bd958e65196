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
    rotateSigningKeys: async (_p, { algorithms }, { app, actor }) => (await app.keys.rotate(algorithms ?? undefined, actor)).map(toKey),
  },
};
