/**
 * Directory sync's types (docs/directory-sync.md): what a pass did, what it writes of a changed
 * record, and what the `directory_syncs` row keeps of the last one. A model module: types and their
 * constants, no SQL.
 */
import type { User } from '../users/model.ts';

/**
 * A changed record's profile as a pass writes it. `keep`: the columns its backend did not report
 * (roles without `adminGroups`), which are the administrators' (docs/directory-sync.md "What a pass
 * never touches"). The write leaves those as the row holds them when it is written, not as the pass
 * read them: an administrator may change them in the seconds between the pass's read and its write,
 * and the value read then would undo that change.
 */
export interface ProfileUpdate {
  user: User;
  keep: { roles: boolean; attributes: boolean };
}

/** What a pass changed, by kind of change. */
export interface SyncCounts {
  /** The users the directory listed. */
  users: number;
  created: number;
  updated: number;
  deprovisioned: number;
  reenabled: number;
}

/**
 * How a pass ended: `applied` (its changes are made), `refused` (it would have deprovisioned more than
 * `maxLeaverShare`: nothing was changed), `failed` (the directory could not be read whole, or a write
 * failed: nobody was deprovisioned).
 */
export type SyncOutcome = 'applied' | 'refused' | 'failed';

/** A pass's result, as `syncBackend` and `latchkey sync` report it. */
export interface SyncResult extends SyncCounts {
  backend: string;
  outcome: SyncOutcome;
  /** ms since the epoch, when the pass ended. */
  at: number;
  durationMs: number;
  /** Why it was refused or failed; null when applied. */
  error: string | null;
}

/** The last pass of a backend, as its `directory_syncs` row keeps it (GraphQL `lastSync`, the metrics). */
export interface LastSync extends SyncCounts {
  backend: string;
  /** ms since the epoch. */
  at: number;
  /** ms since the epoch of the last pass that applied; null when none has. */
  lastSuccessAt: number | null;
  durationMs: number;
  outcome: SyncOutcome;
  error: string | null;
}

/** The zero counts. */
export const NO_CHANGES: Readonly<SyncCounts> = { users: 0, created: 0, updated: 0, deprovisioned: 0, reenabled: 0 };
