import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { User, UserQueries } from '../users/queries.ts';
import { BackendUnavailableError, type Identity, type IdentityBackend } from './contract.ts';

export interface ChainMember {
  id: string;
  plugin: string;
  backend: IdentityBackend;
}

export type SignInResult =
  | { ok: true; user: User }
  | { ok: false; reason: 'invalid_credentials' | 'disabled'; user?: User }
  | { ok: false; reason: 'unavailable'; backends: string[] };

/**
 * The backends in their configured order. The first that holds the username owns it: its answer is
 * final, and the user is never tried against a later backend under the same name. A backend that is
 * down is skipped (later ones may still hold the user); if nobody answered for the user and one was
 * down, the result is `unavailable`, never a failed login.
 */
export class IdentityChain {
  constructor(
    readonly members: ChainMember[],
    private readonly users: UserQueries,
    private readonly logger: Logger,
  ) {}

  async signIn(username: string, password: string): Promise<SignInResult> {
    // An empty password is refused here, before any backend: an LDAP bind with one is anonymous.
    if (!username || !password) return { ok: false, reason: 'invalid_credentials' };
    const down: string[] = [];
    for (const member of this.members) {
      let check;
      try {
        check = await member.backend.checkPassword(username, password);
      } catch (err) {
        if (!(err instanceof BackendUnavailableError)) throw err;
        this.logger.warn({ backend: member.id, err: err.message }, 'identity backend unavailable');
        down.push(member.id);
        continue;
      }
      if (!check.identity) continue;
      if (!check.validPassword) return { ok: false, reason: 'invalid_credentials' };
      const user = await this.provision(member.id, check.identity);
      if (user.disabled || check.identity.disabled) return { ok: false, reason: 'disabled', user };
      return { ok: true, user };
    }
    if (down.length > 0) return { ok: false, reason: 'unavailable', backends: down };
    return { ok: false, reason: 'invalid_credentials' };
  }

  /** The local record of a backend's user: created on first sign-in, refreshed at each one. */
  private async provision(backendId: string, identity: Identity): Promise<User> {
    if (identity.userId) {
      const user = await this.users.find(identity.userId);
      if (user) return user;
    }
    const now = Date.now();
    const existing = await this.users.findByExternalId(backendId, identity.externalId);
    const fields = {
      username: identity.username,
      email: identity.email ?? null,
      displayName: identity.displayName ?? null,
      groups: identity.groups ?? [],
      roles: identity.roles ?? [],
      disabled: identity.disabled ?? false,
    };
    if (existing) {
      const user = { ...existing, ...fields, updatedAt: now };
      await this.users.update(user);
      return user;
    }
    const user: User = {
      id: randomUUID(),
      backend: backendId,
      externalId: identity.externalId,
      passwordHash: null,
      createdAt: now,
      updatedAt: now,
      ...fields,
    };
    await this.users.insert(user);
    return user;
  }

  async health(): Promise<Record<string, 'up' | 'down'>> {
    const entries = await Promise.all(
      this.members.map(async (m) => {
        try {
          return [m.id, m.backend.health ? ((await m.backend.health()) ? 'up' : 'down') : 'up'] as const;
        } catch {
          return [m.id, 'down'] as const;
        }
      }),
    );
    return Object.fromEntries(entries);
  }

  async close(): Promise<void> {
    await Promise.all(this.members.map((m) => m.backend.close?.()));
  }
}
