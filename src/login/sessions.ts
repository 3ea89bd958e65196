import { hashToken, randomToken } from '../crypto/tokens.ts';
import type { Amr } from '../mfa/service.ts';
import type { SessionQueries, SsoSession } from './session-queries.ts';
import { clock } from '../clock.ts';

export type { SsoSession } from './session-queries.ts';

/** Server-side SSO sessions; the browser holds only a random cookie value. */
export const sessionStore = (queries: SessionQueries, ttlSeconds: number) => ({
  async create(userId: string, amr: Amr[] = ['pwd']): Promise<{ cookie: string; session: SsoSession }> {
    const cookie = randomToken();
    const now = clock.now();
    const session = { id: hashToken(cookie), userId, authTime: now, amr, expiresAt: now + ttlSeconds * 1000 };
    await queries.insert(session, now);
    return { cookie, session };
  },

  async find(cookie: string | undefined): Promise<SsoSession | undefined> {
    if (!cookie) return undefined;
    const session = await queries.find(hashToken(cookie));
    return session && session.expiresAt > clock.now() ? session : undefined;
  },

  setAmr: queries.setAmr,
  remove: queries.remove,
  removeAllOf: queries.removeAllOf,
});

export type SessionStore = ReturnType<typeof sessionStore>;
