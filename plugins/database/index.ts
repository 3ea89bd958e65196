import { z } from 'zod';
import { defineIdentityPlugin, verifyPassword, type IdentityBackend } from '../../src/identity/plugin-kit.ts';

/** The built-in backend: users in Latchkey's own `users` table, argon2id hashes. */
export default defineIdentityPlugin({
  id: 'database',
  configSchema: z.object({}).strict(),
  create(_config, ctx): IdentityBackend {
    const users = ctx.localUsers;
    return {
      async checkPassword(username, password) {
        const user = await users.find(username);
        // verifyPassword runs a decoy hash for unknown users: same timing for both answers.
        const validPassword = await verifyPassword(user?.passwordHash ?? null, password);
        if (!user) return { validPassword: false };
        return {
          validPassword,
          identity: {
            userId: user.id,
            externalId: user.externalId,
            username: user.username,
            email: user.email,
            displayName: user.displayName,
            groups: user.groups,
            roles: user.roles,
            disabled: user.disabled,
          },
        };
      },
      async health() {
        await users.ping();
        return true;
      },
    };
  },
});
