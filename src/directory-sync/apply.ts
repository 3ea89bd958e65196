/**
 * Makes a pass's planned changes (docs/directory-sync.md "What a pass does"): renames first (so no two
 * records ever hold one name), then new and changed records in batched transactions, then returners,
 * leavers last, each through the user service's one way to do it (src/users/leavers.ts). A write that
 * fails stops the pass there; what it wrote stays (the next pass finds it done), and as leavers come
 * last, a pass that fails before them deprovisions nobody. On SQLite the pass rests after each
 * transaction (pace.ts), so the server's requests get their turns on the event loop and the one
 * connection.
 */
import type { Origin } from '../audit/model.ts';
import type { Leavers } from '../users/leavers.ts';
import type { User } from '../users/model.ts';
import type { ProfileUpdate, SyncCounts } from './model.ts';
import type { Pace } from './pace.ts';
import type { SyncPlan } from './plan.ts';
import type { SyncQueries } from './sync-queries.ts';

/**
 * Rows per insert or update statement, and per transaction. On SQLite a transaction holds the event
 * loop and the one connection while it runs, so it is kept short: 100 new rows took 5 to 10 ms on
 * the 2-core bench machine, about one slice of pace.ts. PostgreSQL writes while the loop is free,
 * and larger batches save it round trips.
 */
const BATCH = { onEventLoop: 100, elsewhere: 500 };

export interface ApplyDeps {
  backend: string;
  transaction: <T>(work: (q: SyncQueries) => Promise<T>) => Promise<T>;
  users: Pick<Leavers, 'deprovision' | 'reenable'>;
  /** The upstreams' ids: their accounts lose a verified email a directory user is given (docs/decisions.md "Upstream emails"). */
  upstreams: readonly string[];
  /** Throws when the pass must stop (this process lost the lease). */
  check: () => void;
  pace: Pace;
  /** Writes run on the event loop (SQLite): each is followed by a rest (`SyncQueries.onEventLoop`). */
  onEventLoop: boolean;
  now: number;
  origin?: Origin;
}

function* batches<T>(list: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < list.length; i += size) yield list.slice(i, i + size);
}

/** Deprovisionings under way at once. */
const LEAVERS_AT_ONCE = 4;

const emailsOf = (users: User[]) => users.flatMap((u) => (u.email ? [u.email] : []));

/** Applies `plan`, counting into `counts` as each write commits (so a pass that fails midway reports what it did). */
export async function applyPlan(plan: SyncPlan, d: ApplyDeps, counts: Omit<SyncCounts, 'users'>): Promise<void> {
  /**
   * After each write: on SQLite it held the event loop and the one connection from start to end, and
   * the requests that queued behind it get a rest; on PostgreSQL the loop was theirs while the pass
   * waited, and the pass goes on.
   */
  const settle = () => (d.onEventLoop ? d.pace.rest() : d.pace.waited());
  const size = d.onEventLoop ? BATCH.onEventLoop : BATCH.elsewhere;
  const renamed = new Set(plan.renames.map((r) => r.id));
  const emailChanged = new Set(plan.emailChanged);
  /** The profile writes of `updates` and what an email change brings along, in the caller's transaction. */
  const write = async (q: SyncQueries, updates: ProfileUpdate[]) => {
    await q.updateProfiles(updates);
    const changed = updates.flatMap(({ user }) => (emailChanged.has(user.id) ? [user] : []));
    await q.discardResets(changed.map((u) => u.id));
    await q.demoteClaimedEmails(emailsOf(changed), d.upstreams);
    return updates.length;
  };

  if (plan.renames.length > 0) {
    d.check();
    counts.updated += await d.transaction(async (q) => {
      await q.rename(
        plan.renames.map((r) => ({ id: r.id, username: r.to })),
        d.now,
      );
      return write(
        q,
        plan.updates.filter((u) => renamed.has(u.user.id)),
      );
    });
    await settle();
  }
  for (const batch of batches(plan.creates, size)) {
    d.check();
    counts.created += await d.transaction(async (q) => {
      const n = await q.insertUsers(batch);
      await q.demoteClaimedEmails(emailsOf(batch), d.upstreams);
      return n;
    });
    await settle();
  }
  for (const batch of batches(
    plan.updates.filter((u) => !renamed.has(u.user.id)),
    size,
  )) {
    d.check();
    counts.updated += await d.transaction((q) => write(q, batch));
    await settle();
  }
  for (const user of plan.returners) {
    d.check();
    if (await d.users.reenable(user.id, { backend: d.backend, origin: d.origin })) counts.reenabled++;
    if (d.pace.due()) await settle();
  }
  // A few at a time: each is a transaction of its own (the record, every session, the audit event),
  // and PostgreSQL runs them side by side; SQLite takes them one after another anyway.
  // The first failure stops them all, and the pass waits for those under way before it reports.
  const queue = [...plan.leavers];
  let failed = false;
  const worker = async () => {
    for (let next = queue.shift(); next && !failed; next = queue.shift()) {
      try {
        d.check();
        if (await d.users.deprovision(next.user.id, { backend: d.backend, reason: next.reason, origin: d.origin })) counts.deprovisioned++;
        if (d.pace.due()) await settle();
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  const ends = await Promise.allSettled(Array.from({ length: LEAVERS_AT_ONCE }, worker));
  const failure = ends.find((e): e is PromiseRejectedResult => e.status === 'rejected');
  if (failure) throw failure.reason;
}
