import { hashToken, randomToken } from '../crypto/tokens.ts';
import type { TokenQueries } from '../tokens/queries.ts';
import type { SessionQueries } from './session-queries.ts';
import type { Amr, SsoSession } from './model.ts';
import { sessionEnds, type LogoutNotices } from './session-ends.ts';
import type { AuditLog } from '../audit/record.ts';
import type { Transaction } from '../db/transaction.ts';
import { clock } from '../clock.ts';

/** How recent a proof must be to add a factor without being asked again (docs/decisions.md, "Adding a factor"). */
export const PROOF_WINDOW_MS = 5 * 60 * 1000;

/** Whether the session's user proved a factor (the sign-in, or asked again since) within the window. */
export const provedRecently = (s: SsoSession): boolean => clock.now() - Math.max(s.authTime, s.provedAt ?? 0) <= PROOF_WINDOW_MS;

/**
 * Server-side SSO sessions; the browser holds only a random cookie value. Sessions end only through
 * `end` and `endAllOf` (session-ends.ts), which take their codes and tokens with them.
 */
type Ends = ReturnType<typeof sessionEnds>;

/**
 * Outside a transaction, each end runs in one of its own (`own`), so the back-channel notices it
 * queues and its audit events commit with it or not at all; inside one, it joins that.
 */
function ends(
  queries: SessionQueries,
  tokens: TokenQueries,
  audit: Pick<AuditLog, 'record'>,
  notices?: LogoutNotices,
  own?: Transaction<{ sessions: Ends }>,
): Ends {
  const direct = sessionEnds(queries, tokens, audit, notices);
  if (!own) return direct;
  return {
    end: (id, o) => own((tx) => tx.sessions.end(id, o)),
    endAllOf: (userId, o) => own((tx) => tx.sessions.endAllOf(userId, o)),
  };
}

export const sessionStore = (
  queries: SessionQueries,
  ttlSeconds: number,
  tokens: TokenQueries,
  audit: Pick<AuditLog, 'record'>,
  notices?: LogoutNotices,
  own?: Transaction<{ sessions: Ends }>,
) => ({
  async create(userId: string, amr: Amr[] = ['pwd']): Promise<{ cookie: string; session: SsoSession }> {
    const cookie = randomToken();
    const now = clock.now();
    const session = { id: hashToken(cookie), userId, authTime: now, amr, provedAt: null, expiresAt: now + ttlSeconds * 1000 };
    await queries.insert(session, now);
    return { cookie, session };
  },

  async find(cookie: string | undefined): Promise<SsoSession | undefined> {
    if (!cookie) return undefined;
    const session = await queries.find(hashToken(cookie));
    return session && session.expiresAt > clock.now() ? session : undefined;
  },

  /** Whether the session `id` (its hash) still stands: a grant made in it is then still good. */
  async live(id: string): Promise<boolean> {
    const session = await queries.find(id);
    return !!session && session.expiresAt > clock.now();
  },

  /** A factor used on the session (step-up): it carries the factor from now on, proved now. */
  setAmr: (id: string, amr: Amr[]) => queries.setAmr(id, amr, clock.now()),

  /** The password or a factor asked again, and given. */
  proved: (id: string) => queries.setProvedAt(id, clock.now()),

  /** A pending sign-in (pending-sign-in.ts) is stored until `expiresAt`; its id. */
  async startPending(userId: string, expiresAt: number): Promise<string> {
    const id = randomToken(24);
    await queries.insertPending(id, userId, expiresAt);
    return id;
  },

  /** Takes a pending sign-in once; false when it was taken already, or expired. */
  takePending: (id: string) => queries.takePending(id, clock.now()),

  ...ends(queries, tokens, audit, notices, own),
});

export type SessionStore = ReturnType<typeof sessionStore>;
