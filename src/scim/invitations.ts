/**
 * The invitations of SCIM users (docs/scim-provisioning.md "How SCIM users sign in"), durable: each is
 * a row of `scim_invitations` written in the transaction that creates the user, mailed by this sender
 * and then deleted. The sender runs at the server's start (what an earlier process left) and whenever a
 * write queued one (`kick`); it mails one at a time, oldest first, so a first load of thousands of users
 * opens one connection to the mail server, not thousands. A row is leased while it is mailed: a process
 * that dies meanwhile leaves a lease that runs out, and the next start or kick takes it up again.
 */
import type { Logger } from 'pino';
import type { Origin } from '../audit/model.ts';
import { clock } from '../clock.ts';
import type { ScimQueries } from './scim-queries.ts';

/** How long a process may take to mail one invitation before another may take it: well over the mailer's timeouts. */
export const INVITATION_LEASE_MS = 5 * 60_000;

export interface InvitationSenderDeps {
  queries: Pick<ScimQueries, 'leaseInvitation' | 'dropInvitation' | 'releaseInvitation'>;
  /** Mails the invitation of one user, who is read again first (given a password or deprovisioned meanwhile: nothing). */
  invite?: (user: { id: string }, origin: Origin) => Promise<void>;
  logger: Logger;
}

export function invitationSender(deps: InvitationSenderDeps) {
  let started = false;
  let running: Promise<void> | undefined;
  let again = false;

  async function drain(): Promise<void> {
    while (started) {
      const next = await deps.queries.leaseInvitation(clock.now(), INVITATION_LEASE_MS);
      if (!next) return;
      try {
        await deps.invite?.({ id: next.userId }, next.origin);
      } catch (err) {
        // Not mailed (the database failed under it): given back, for the next kick or start.
        deps.logger.error({ err, userId: next.userId, requestId: next.origin.requestId }, 'SCIM invitation not sent; it stays queued');
        await deps.queries.releaseInvitation(next.userId);
        return;
      }
      await deps.queries.dropInvitation(next.userId);
    }
  }

  const kick = (): void => {
    if (!started || !deps.invite) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        await drain();
      } while (again && started);
    })()
      .catch((err: unknown) => deps.logger.error({ err }, 'SCIM invitations: the queue could not be read'))
      .finally(() => {
        running = undefined;
      });
  };

  return {
    /** Mails what is queued, now and after each `kick`. */
    start(): void {
      started = true;
      kick();
    },
    /** A write queued an invitation. */
    kick,
    /** Takes no more; the invitation being mailed finishes (bounded by the mailer's timeouts), the rest wait for the next start. */
    async stop(): Promise<void> {
      started = false;
      await running;
    },
  };
}

export type InvitationSender = ReturnType<typeof invitationSender>;
