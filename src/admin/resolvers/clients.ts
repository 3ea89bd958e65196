import type { Client } from '../../clients/queries.ts';
import { toClient } from '../../clients/queries.ts';
import type { RegisterClientInput } from '../../clients/service.ts';
import { randomToken } from '../../crypto/tokens.ts';
import { notFound } from '../errors.ts';
import type { Resolvers } from '../generated/graphql.ts';
import { paginate } from '../pagination.ts';

const iso = (ms: number) => new Date(ms).toISOString();

/** Escapes LIKE wildcards so a search for `a_b` finds exactly that. */
export const likePattern = (search: string) => `%${search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export const clientResolvers: Resolvers = {
  Query: {
    clients: (_p, { first, after, search }, { app }) => {
      const q = app.db('clients').select('*');
      if (search) {
        const like = likePattern(search);
        q.where((w) => w.whereRaw("lower(name) like ? escape '\\'", [like]).orWhereRaw("lower(client_id) like ? escape '\\'", [like]));
      }
      return paginate(q, { first, after, timeColumn: 'created_at', keyColumn: 'client_id', direction: 'asc' }, toClient);
    },
    client: async (_p, { clientId }, { app }) => (await app.clients.find(clientId)) ?? null,
  },

  Mutation: {
    registerClient: (_p, { input }, ctx) =>
      ctx.change('client.register', {}, async (tx) => {
        const registered = await tx.clients.register(input as RegisterClientInput);
        return { client: registered.client, clientSecret: registered.clientSecret };
      }),

    updateClient: (_p, { clientId, input }, ctx) =>
      ctx.change('client.update', { clientId }, async (tx) => {
        const client = await tx.clients.find(clientId);
        if (!client) throw notFound('clientId', `no client ${clientId}`);
        const next: Client = { ...client };
        for (const [key, value] of Object.entries(input)) {
          if (value === undefined) continue;
          // null resets a lifetime to the server default; for other fields it means "leave as is".
          if (value === null && key !== 'accessTokenTtl' && key !== 'refreshTokenTtl') continue;
          (next as unknown as Record<string, unknown>)[key] = value;
        }
        return tx.clients.update(next);
      }),

    rotateClientSecret: (_p, { clientId }, ctx) =>
      ctx.change('client.rotate_secret', { clientId }, async (tx) => {
        const client = await tx.clients.find(clientId);
        if (!client) throw notFound('clientId', `no client ${clientId}`);
        const clientSecret = randomToken(32);
        const updated = await tx.clients.setSecret(client, clientSecret);
        return { client: updated, clientSecret };
      }),

    deleteClient: async (_p, { clientId }, ctx) => {
      if (clientId === 'admin-cli') throw notFound('clientId', 'admin-cli is built in and cannot be deleted');
      // Its codes, tokens and consents go with it (ON DELETE CASCADE).
      return ctx.change('client.delete', { clientId }, (tx) => tx.clients.remove(clientId));
    },
  },

  Client: {
    createdAt: (c) => iso(c.createdAt),
    updatedAt: (c) => iso(c.updatedAt),
  },

  AccessTokenFormat: { OPAQUE: 'opaque', JWT: 'jwt' },

  GrantType: {
    AUTHORIZATION_CODE: 'authorization_code',
    PASSWORD: 'password',
    REFRESH_TOKEN: 'refresh_token',
    CLIENT_CREDENTIALS: 'client_credentials',
  },
};
