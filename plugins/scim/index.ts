import { z } from 'zod';
import { defineIdentityPlugin, verifyPassword, type IdentityBackend } from '../../src/identity/plugin-kit.ts';

/**
 * The `config:` of a `scim` backend (docs/scim-provisioning.md "Setting up a SCIM backend"). Strict: a
 * misspelt key is refused at start, naming it, never taken for a setting left off.
 */
export const scimConfig = z
  .object({
    /** Mail a link to set a password to a user created active, with an email and no password. @default false */
    invite: z.boolean().default(false),
    /** The upstream whose users sign in as the SCIM user of the same userName (or verified email). */
    linkUpstream: z.string().min(1).optional(),
  })
  .strict();

/**
 * Users a SCIM client pushes (docs/scim-provisioning.md): their records are Latchkey's own, written by
 * the `/scim/v2` endpoint, so the password check reads them as the database backend does. There is
 * nothing to list or refresh: the client tells Latchkey of every change.
 */
export default defineIdentityPlugin({
  id: 'scim',
  configSchema: scimConfig,
  create(_config, ctx): IdentityBackend {
    const users = ctx.localUsers;
    return {
      async checkPassword(username, password) {
        const user = await users.find(username);
        // A decoy hash for an unknown user or one without a password (invited, or signing in upstream
        // only): the same time for every answer.
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
            // A deprovisioned user (`active: false`, DELETE) is refused after a right password, as a directory's is.
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
