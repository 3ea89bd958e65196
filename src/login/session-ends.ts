import type { Actor } from '../audit/record.ts';
import { clock } from '../clock.ts';
import type { TokenQueries } from '../tokens/queries.ts';
import type { SessionQueries } from './session-queries.ts';
import type { BackchannelQueries } from './backchannel-queries.ts';
import { randomToken, sessionSid } from '../crypto/tokens.ts';

export interface EndAllOptions {
  /** The session that made the change: it stays (its codes from before the change do not). */
  except?: string;
  /** Who made the change: the user at /account, an administrator through a token of one of their sessions. */
  actor?: Actor;
}

/** What ending took with it. */
export interface Ended {
  sessions: number;
  tokens: number;
}

/**
 * Back-channel logout (logout-notices.ts) hangs off here: the notices are queued with the end, in
 * its transaction when there is one, and `queued` wakes this process's delivery worker (after the
 * commit, when inside a transaction).
 */
export interface LogoutNotices {
  queries: BackchannelQueries;
  queued(): void;
}

/**
 * The one way SSO sessions end (docs/decisions.md, "Sessions end with the credentials"): RP logout, sign out
 * everywhere and every credential change (a password, a factor added or removed, MFA reset, a user
 * disabled or deleted, an administrator's revocation) come here, so no code or token outlives the sign-in it
 * came from, and a back-channel logout has one place to hang off.
 *
 * The order closes the race with a code exchange at the same moment: codes are refused first, on the
 * row the exchange must spend, so an exchange either committed its tokens before (they are revoked
 * last) or finds its code refused and issues nothing. Inside a transaction (`tx.sessions`) it all
 * commits with the change. The back-channel notices are queued before the sessions go (they
 * name the user and the clients to tell); a session that merely expires is never ended here.
 */
export const sessionEnds = (sessions: SessionQueries, tokens: TokenQueries, notices?: LogoutNotices) => {
  async function queueNotices(where: { sessionId: string } | { userId: string; except?: string }, now: number): Promise<void> {
    if (!notices) return;
    const targets = await notices.queries.targets(where, now);
    if (targets.length === 0) return;
    await notices.queries.enqueue(
      targets.map((t) => ({ id: randomToken(24), clientId: t.clientId, userId: t.userId, sid: sessionSid(t.sessionId) })),
      now,
    );
    notices.queued();
  }

  return {
    /** One session (RP logout): its codes, the session, and the tokens issued under it. */
    async end(sessionId: string): Promise<Ended> {
      const now = clock.now();
      await queueNotices({ sessionId }, now);
      await tokens.refuseCodes({ session_id: sessionId }, now);
      const ended = await sessions.remove(sessionId);
      return { sessions: ended, tokens: await tokens.revokeWhere({ session_id: sessionId }, now) };
    },

    /**
     * Every session of a user but `except`, with the user's pending sign-ins, codes not yet redeemed
     * (the kept session's too: issued before the change) and tokens.
     */
    async endAllOf(userId: string, o: EndAllOptions): Promise<Ended> {
      const now = clock.now();
      await tokens.refuseCodes({ user_id: userId }, now);
      // The session that made the change stays, whoever passed it: the user at /account, or an admin
      // changing their own account through a token of that session.
      const except = o.except ?? (o.actor?.userId === userId ? (o.actor.sessionId ?? undefined) : undefined);
      await queueNotices({ userId, except }, now);
      const ended = await sessions.removeAllOf(userId, except);
      await sessions.removePendingOf(userId);
      return { sessions: ended, tokens: await tokens.revokeWhere({ user_id: userId }, now) };
    },
  };
};
