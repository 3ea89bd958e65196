import { z } from 'zod';
import { defineIdentityPlugin, localPasswordBackend } from '../../src/identity/plugin-kit.ts';

/** The built-in backend: users in Latchkey's own `users` table, argon2id hashes. */
export default defineIdentityPlugin({
  id: 'database',
  configSchema: z.object({}).strict(),
  create: (_config, ctx) => localPasswordBackend(ctx),
});
