/**
 * What the SCIM services share (docs/scim-provisioning.md "What the endpoint supports"): their
 * dependencies, what a write needs of a transaction, and how a write's audit event names its caller.
 */
import type { Logger } from 'pino';
import type { Origin } from '../audit/model.ts';
import type { Actor, AuditLog } from '../audit/record.ts';
import type { Transaction } from '../db/transaction.ts';
import type { SessionStore } from '../login/sessions.ts';
import type { ResetQueries } from '../password-reset/reset-queries.ts';
import type { Leavers } from '../users/leavers.ts';
import type { User } from '../users/model.ts';
import type { UserQueries } from '../users/queries.ts';
import type { InvitationSender } from './invitations.ts';
import type { ScimCaller } from './model.ts';
import type { ScimQueries } from './scim-queries.ts';

/** What a SCIM write needs of a transaction. */
export interface ScimTransaction {
  queries: { users: UserQueries; scim: ScimQueries; resets: Pick<ResetQueries, 'discardAllOf'> };
  users: Pick<Leavers, 'deprovision' | 'reenable'>;
  sessions: Pick<SessionStore, 'endAllOf'>;
  audit: Pick<AuditLog, 'change'>;
}

export interface ScimServiceDeps {
  transaction: Transaction<ScimTransaction>;
  /** Reads outside a transaction. */
  queries: ScimQueries;
  /** Where `/scim/v2` is reached (config publicUrl + /scim/v2): the base of `meta.location`. */
  base: string;
  /** The upstream identity providers' ids: an address given here stops being theirs (docs/decisions.md "Upstream emails"). */
  upstreams: readonly string[];
  /** Whether a backend mails an invitation to a new user who has an email and no password. */
  invites: (backend: string) => boolean;
  /**
   * Mails the invitation of a user queued in `scim_invitations` (docs/scim-provisioning.md "How SCIM
   * users sign in"), reading them again first; wired by the root. Without it nothing is mailed.
   */
  invite?: (user: Pick<User, 'id'>, origin: Origin) => Promise<void>;
  logger: Logger;
  /** Told when a write queued an invitation (src/scim/invitations.ts). */
  invitations: Pick<InvitationSender, 'kick'>;
}

/** The actor of a SCIM write's audit event: the client, or (details) the SCIM token. */
export const actorOf = (caller: ScimCaller, origin: Origin): Actor => ({
  userId: null,
  clientId: caller.clientId,
  via: 'scim',
  ip: origin.ip ?? null,
  requestId: origin.requestId ?? null,
});

/** The audit details every SCIM write carries: the backend and the SCIM token, if one was used. */
export const callerDetails = (caller: ScimCaller) => ({
  backend: caller.backend,
  ...(caller.tokenId ? { scimToken: caller.tokenId } : {}),
});
