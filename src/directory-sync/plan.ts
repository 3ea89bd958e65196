/**
 * One pass's changes, worked out in memory from what the directory listed and the backend's local
 * records (docs/directory-sync.md "What a pass does"). The rules are one generator that pauses every
 * few records: `planSync` runs it through at once (the unit tests, without a directory or a
 * database), `planPaced` lets the server's requests in between slices of it (a pass of 100,000 users).
 */
import type { Identity } from '../identity/contract.ts';
import type { User } from '../users/model.ts';
import type { LeaveReason } from '../users/leavers.ts';
import type { ProfileUpdate } from './model.ts';
import type { Pace } from './pace.ts';

export interface SyncPlan {
  /** Identities the directory listed (each external id once). */
  listed: number;
  /** Enabled local records before the pass: what `maxLeaverShare` is a share of. */
  enabled: number;
  /** New local records, as a first sign-in would make them. */
  creates: User[];
  /** Records whose profile changes (returners' included), as they will be written. */
  updates: ProfileUpdate[];
  /** The ids of `updates` whose email changes: their reset links die (docs/decisions.md "Reset links and the admin's remedies"). */
  emailChanged: string[];
  /**
   * Records that give up their name, renamed to `to` (`name~id`) before any create or update, so no
   * two records ever hold one name: those still listed then take their new name (in `updates`); a
   * record the directory no longer lists keeps `name~id`, freeing its name for the entry that has it
   * now (as src/identity/chain.ts's `freeUsername` does at a sign-in).
   */
  renames: Array<{ id: string; from: string; to: string }>;
  /** Records the directory shows enabled again, which a directory had disabled. */
  returners: User[];
  leavers: Array<{ user: User; reason: LeaveReason }>;
  /** Names listed for more than one entry: the later entries are left alone this pass. */
  duplicates: string[];
}

/** A record renamed away from a name another entry took (chain.ts's `freeUsername`, or a pass): `name~id`. */
export const isRetired = (u: User): boolean => u.username.endsWith(`~${u.id}`);

const retiredName = (u: User): string => (isRetired(u) ? u.username : `${u.username}~${u.id}`);

/** The profile a sign-in would give the record (src/identity/chain.ts `provision`), state aside. */
function profile(identity: Identity, existing: User | undefined) {
  return {
    username: identity.username,
    email: identity.email ?? null,
    emailVerified: true,
    displayName: identity.displayName ?? null,
    groups: identity.groups ?? [],
    // A backend that reports roles or attributes owns them; one that does not leaves them as they are
    // (and its update keeps them: `ProfileUpdate.keep`).
    roles: identity.roles ?? existing?.roles ?? [],
    attributes: identity.attributes ?? existing?.attributes ?? {},
  };
}

/**
 * Groups and roles compare as sets: a listing may give them in another order than a sign-in does,
 * and rewriting every such record at each pass would be churn, not change. Most are in the same
 * order, and that is checked first, without a set.
 */
const sameSet = (a: readonly string[], b: readonly string[]): boolean => {
  if (a.length !== b.length) return false;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  if (i === a.length) return true;
  const held = new Set(a);
  return b.every((x) => held.has(x));
};

/** Attributes compare by name and value (a list's values in order), whatever the order of the names. */
const sameAttributes = (a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>): boolean => {
  const names = Object.keys(a);
  return names.length === Object.keys(b).length && names.every((name) => Object.hasOwn(b, name) && sameValue(a[name], b[name]));
};

const sameValue = (x: unknown, y: unknown): boolean => {
  if (x === y) return true;
  if (Array.isArray(x) || Array.isArray(y))
    return Array.isArray(x) && Array.isArray(y) && x.length === y.length && x.every((v, i) => sameValue(v, y[i]));
  return (
    typeof x === 'object' &&
    typeof y === 'object' &&
    x !== null &&
    y !== null &&
    sameAttributes(x as Record<string, unknown>, y as Record<string, unknown>)
  );
};

const sameProfile = (u: User, p: ReturnType<typeof profile>): boolean =>
  u.username === p.username &&
  u.email === p.email &&
  u.emailVerified === p.emailVerified &&
  u.displayName === p.displayName &&
  sameSet(u.groups, p.groups) &&
  sameSet(u.roles, p.roles) &&
  sameAttributes(u.attributes, p.attributes);

/** Why the directory no longer lets a user in. */
const reasonOf = (identity: Identity): LeaveReason => (identity.refusal === 'account_expired' ? 'expired' : 'disabled');

interface PlanOptions {
  now: number;
  newId: () => string;
}

/** The rules, through at once. */
export function planSync(backend: string, listing: Iterable<Identity>, locals: readonly User[], o: PlanOptions): SyncPlan {
  const steps = planning(backend, listing, locals, o);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** The rules, resting between slices as `pace` says. */
export async function planPaced(
  backend: string,
  listing: Iterable<Identity>,
  locals: readonly User[],
  o: PlanOptions & { pace: Pace },
): Promise<SyncPlan> {
  const steps = planning(backend, listing, locals, o);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (o.pace.due()) await o.pace.rest();
  }
}

/** Records between two pauses of `planning`: a few hundred microseconds of work. */
const STRIDE = 128;

/** `planSync`'s rules, pausing (`yield`) every `STRIDE` records or so. */
function* planning(backend: string, listing: Iterable<Identity>, locals: readonly User[], o: PlanOptions): Generator<void, SyncPlan> {
  let work = 0;
  const byExternalId = new Map<string, User>();
  const byName = new Map<string, User>();
  const plan: SyncPlan = {
    listed: 0,
    enabled: 0,
    creates: [],
    updates: [],
    emailChanged: [],
    renames: [],
    returners: [],
    leavers: [],
    duplicates: [],
  };
  for (const u of locals) {
    byExternalId.set(u.externalId, u);
    byName.set(u.username.toLowerCase(), u);
    if (!u.disabled) plan.enabled++;
    if (++work % STRIDE === 0) yield;
  }

  // Each external id once, each name once: a directory that lists a name twice cannot say whose it is.
  const seen = new Set<string>();
  const wanted = new Map<string, Identity>();
  for (const identity of listing) {
    if (++work % STRIDE === 0) yield;
    if (seen.has(identity.externalId)) continue;
    seen.add(identity.externalId);
    const key = identity.username.toLowerCase();
    if (wanted.has(key)) plan.duplicates.push(identity.username);
    else wanted.set(key, identity);
  }
  plan.listed = seen.size;

  const renamed = new Set<string>();
  /** Frees `name` for `identity`: its holder, if another entry's record, is renamed away first. */
  const free = (name: string, identity: Identity) => {
    const holder = byName.get(name.toLowerCase());
    if (!holder || holder.externalId === identity.externalId || renamed.has(holder.id)) return;
    renamed.add(holder.id);
    // Still listed under another name: it takes that one below; else it keeps `name~id`.
    plan.renames.push({ id: holder.id, from: holder.username, to: retiredName(holder) });
  };

  for (const identity of wanted.values()) {
    if (++work % STRIDE === 0) yield;
    const existing = byExternalId.get(identity.externalId);
    const fields = profile(identity, existing);
    if (!existing) {
      // A disabled account that never had a record gets none: it could not sign in to have one.
      if (identity.disabled) continue;
      free(identity.username, identity);
      plan.creates.push({
        id: '',
        backend,
        externalId: identity.externalId,
        passwordHash: null,
        disabled: false,
        disabledBy: null,
        createdAt: o.now,
        updatedAt: o.now,
        ...fields,
      });
      continue;
    }
    if (!sameProfile(existing, fields)) {
      // A new name (not only new capitals): whoever holds it gives it up, and so does this record its own.
      if (existing.username.toLowerCase() !== fields.username.toLowerCase()) {
        free(identity.username, identity);
        if (!renamed.has(existing.id)) {
          renamed.add(existing.id);
          plan.renames.push({ id: existing.id, from: existing.username, to: retiredName(existing) });
        }
      }
      plan.updates.push({
        user: { ...existing, ...fields, updatedAt: o.now },
        keep: { roles: identity.roles === undefined, attributes: identity.attributes === undefined },
      });
      if (existing.email !== fields.email) plan.emailChanged.push(existing.id);
    }
    // The account state: an administrator's disabling is theirs, never undone or redone here.
    if (identity.disabled && !existing.disabled) plan.leavers.push({ user: existing, reason: reasonOf(identity) });
    else if (!identity.disabled && existing.disabled && existing.disabledBy === 'directory') plan.returners.push(existing);
  }

  // Gone from the listing: a leaver, unless disabled already or retired (its entry left long ago).
  // An entry listed under a name another entry holds counts as listed: left alone this pass.
  for (const u of locals) {
    if (++work % STRIDE === 0) yield;
    if (seen.has(u.externalId) || u.disabled || isRetired(u)) continue;
    plan.leavers.push({ user: u, reason: 'not_found' });
  }

  // New records get their ids in ascending order, in the order they are listed (a directory lists
  // mostly in the order of its own ids and names): each batch of them then lands in one stretch of
  // each index of the users table, instead of in a page of its own for every row. Written at
  // random places, every batch rewrote pages all over each index, and the commits took half the
  // writing time of a first pass of 100,000.
  const ids: string[] = [];
  for (let i = 0; i < plan.creates.length; i++) {
    ids.push(o.newId());
    if (i % STRIDE === 0) yield;
  }
  const order = yield* sorted(ids);
  for (const [i, u] of plan.creates.entries()) u.id = order[i]!;
  return plan;
}

/** Strings in ascending order (as `Array.prototype.sort` orders them), by a merge sort that pauses every `STRIDE` strings. */
function* sorted(list: string[]): Generator<void, string[]> {
  const RUN = 256;
  let from = list.slice();
  for (let i = 0; i < from.length; i += RUN) {
    const run = from.slice(i, i + RUN).sort();
    for (let j = 0; j < run.length; j++) from[i + j] = run[j]!;
    yield;
  }
  let to = new Array<string>(from.length);
  for (let width = RUN; width < from.length; width *= 2) {
    for (let lo = 0; lo < from.length; lo += 2 * width) {
      const mid = Math.min(lo + width, from.length);
      const hi = Math.min(lo + 2 * width, from.length);
      let a = lo;
      let b = mid;
      for (let k = lo; k < hi; k++) {
        to[k] = b >= hi || (a < mid && from[a]! <= from[b]!) ? from[a++]! : from[b++]!;
        if (k % STRIDE === 0) yield;
      }
    }
    [from, to] = [to, from];
  }
  return from;
}
