import { verifyPassword } from '../crypto/passwords.ts';
import type { IdentityBackend, PluginContext } from './contract.ts';

/**
 * The password check of a backend whose users are records of Latchkey's own `users` table (the
 * built-in `database` backend, and `scim`, whose users a SCIM client writes): the record's argon2id
 * hash decides, and a disabled user (an administrator's act, a directory leaver, a SCIM
 * deprovisioning) is refused after a right password, as a directory's is (docs/identity-backends.md).
 */
export function localPasswordBackend({ localUsers: users }: Pick<PluginContext, 'localUsers'>): IdentityBackend {
  return {
    async checkPassword(username, password) {
      const user = await users.find(username);
      // An unknown name: the chain hashes a decoy if no other backend answers for it (`decoy`).
      if (!user) return { validPassword: false, decoy: true };
      // A user without a password (invited, or signing in upstream only) gets a decoy hash here: the
      // same time as any other answer for a known name.
      const validPassword = await verifyPassword(user.passwordHash, password);
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
}
