/**
 * The brute-force ladders: how many failures are free, then how long each further one blocks.
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

/** A delay ladder: how long a key waits after its `n`-th counted failure within a window. */
export interface Ladder {
  /** Failures within the window before any delay; also how many attempts may be checked at once. */
  free: number;
  /** Delay after failure number `free`, doubling with each further one. */
  baseMs: number;
  maxMs: number;
  windowMs: number;
}

/** A limit rather than a ladder: past `free` within the window, one block of `blockMs`, never doubling. */
export const flatLadder = (free: number, blockMs: number, windowMs: number): Ladder => ({
  free,
  baseMs: blockMs,
  maxMs: blockMs,
  windowMs,
});

export const delayMs = (n: number, l: Ladder): number => (n < l.free ? 0 : Math.min(l.baseMs * 2 ** (n - l.free), l.maxMs));

/** What one key's count does when an attempt ends. */
export type KeyOutcome =
  | { key: string; outcome: 'failed'; ladder: Ladder; held: boolean }
  | { key: string; outcome: 'cleared'; held: boolean }
  | { key: string; outcome: 'released' };
