import type { Actor, AuditLog } from '../audit/record.ts';
import type { Origin } from '../audit/model.ts';
import { clock } from '../clock.ts';
import type { TokenQueries } from '../tokens/queries.ts';
import type { SessionQueries } from './session-queries.ts';
import type { BackchannelQueries } from './backchannel-queries.ts';
import type { SamlLogoutQueries } from '../saml/soap-logout-queries.ts';
import { randomToken, sessionSid } from '../crypto/tokens.ts';

export interface EndAllOptions {
  /** The session that made the change: it stays (its codes from before the change do not). */
  except?: string;
  /** Who made the change: the user at /account, an administrator through a token of one of their sessions. */
  actor?: Actor;
  /**
   * Set when the end is the act itself, which is then audited with it: `signed_out_everywhere`, the
   * user's "Sign out everywhere" at /account (`token.revoked` with the count, then
   * `account.signed_out_everywhere`). A credential change ending the sessions audits the change instead.
   */
  reason?: 'signed_out_everywhere';
  origin?: Origin;
}

/** An end that is the act itself, audited with it: `logout`, RP-initiated logout (a `logout` event naming the client). */
export interface EndOptions {
  reason: 'logout';
  /** The session's user, named by the event. */
  userId: string;
  clientId?: string;
  origin: Origin;
}

/** What ending took with it. */
export interface Ended {
  sessions: number;
  tokens: number;
}

/**
 * Back-channel logout (logout-notices.ts) and SAML logout by SOAP (src/saml/soap-logout.ts) hang off
 * here: the notices are queued with the end, in its transaction when there is one, and `queued` wakes
 * this process's delivery workers (after the commit, when inside a transaction).
 */
export interface LogoutNotices {
  queries: BackchannelQueries;
  /** The SAML SPs of the ending sessions with a SOAP SingleLogoutService (docs/saml-applications.md "Single logout by SOAP"). */
  saml?: Pick<SamlLogoutQueries, 'targets' | 'enqueue' | 'forgetParticipants'>;
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
 * commits with the change. The back-channel and SAML notices are queued before the sessions go (they
 * name the user, the clients and the SPs to tell); a session that merely expires is never ended here.
 */
/** Which sessions end: one, or a user's but `except`. */
type Ending = { sessionId: string } | { userId: string; except?: string };

export const sessionEnds = (sessions: SessionQueries, tokens: TokenQueries, audit: Pick<AuditLog, 'record'>, notices?: LogoutNotices) => {
  async function queueNotices(where: Ending, now: number): Promise<void> {
    if (!notices) return;
    const targets = await notices.queries.targets(where, now);
    await notices.queries.enqueue(
      targets.map((t) => ({ id: randomToken(24), clientId: t.clientId, userId: t.userId, sid: sessionSid(t.sessionId) })),
      now,
    );
    const sps = notices.saml ? await queueSamlLogouts(notices.saml, where, now) : 0;
    if (targets.length + sps > 0) notices.queued();
  }

  /**
   * Each SAML participant of the ending sessions whose SP has a SOAP URL gets a LogoutRequest naming
   * the NameID it was given and the assertions' SessionIndex (the sid); then every participant of
   * those sessions goes, so no SP is told twice. A front-channel SAML logout took the SPs it tells
   * in the browser (and the one that asked) before ending the session (src/saml/idp.ts).
   */
  async function queueSamlLogouts(saml: NonNullable<LogoutNotices['saml']>, where: Ending, now: number): Promise<number> {
    const targets = await saml.targets(where, now);
    await saml.enqueue(
      targets.map((t) => ({
        id: randomToken(24),
        spId: t.spId,
        userId: t.userId,
        nameId: t.nameId,
        nameIdFormat: t.nameIdFormat,
        sessionIndex: sessionSid(t.sessionId),
      })),
      now,
    );
    await saml.forgetParticipants(where);
    return targets.length;
  }

  return {
    /** One session (RP logout, SAML logout): its codes, the session, and the tokens issued under it; audited when `o` says why. */
    async end(sessionId: string, o?: EndOptions): Promise<Ended> {
      const now = clock.now();
      await queueNotices({ sessionId }, now);
      await tokens.refuseCodes({ session_id: sessionId }, now);
      const ended = await sessions.remove(sessionId);
      const revoked = await tokens.revokeWhere({ session_id: sessionId }, now);
      if (o?.reason === 'logout') {
        await audit.record({ kind: 'logout', userId: o.userId, clientId: o.clientId, ip: o.origin.ip, requestId: o.origin.requestId });
      }
      return { sessions: ended, tokens: revoked };
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
      const revoked = await tokens.revokeWhere({ user_id: userId }, now);
      if (o.reason === 'signed_out_everywhere') {
        const { ip, requestId } = o.origin ?? {};
        await audit.record({ kind: 'token.revoked', userId, ip, requestId, details: { count: revoked } });
        await audit.record({ kind: 'account.signed_out_everywhere', userId, ip, requestId, details: { sessions: ended } });
      }
      return { sessions: ended, tokens: revoked };
    },
  };
};
