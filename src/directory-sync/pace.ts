/**
 * A pass shares the server's one event loop with the requests it answers meanwhile
 * (docs/directory-sync.md "What a pass does"): it works in slices of a few milliseconds, and after
 * each one lets the loop run whatever waits (requests, timers) for longer than the slice took, unless
 * the loop has nothing to do. On SQLite every statement runs on that loop too, so a pass that never
 * paused would hold up every request for as long as its comparison or its writes took.
 */
import { performance } from 'node:perf_hooks';

/** How long a slice of a pass may run before it lets requests in: also about the longest a request waits behind it. */
const SLICE_MS = 10;

/**
 * A rest lasts this many times as long as the slice before it while requests keep the loop busy: a
 * pass takes about a third of a busy server's loop, and requests keep about half their rate or more
 * (they had about 90 % of the loop before, and each costs a little more while a pass runs). A pass of
 * 100,000 users still takes well under the minute it is allowed (docs/directory-sync.md "What a pass does").
 */
const REST_FACTOR = 2;

/** A slice that ran long (a slow statement, a garbage collection) earns a rest no longer than this. */
const MAX_REST_MS = 100;

/** A rest listens this long at a time; one in which the loop mostly waited ends it (a quiet server loses almost nothing). */
const LISTEN_MS = 1;

export interface Pace {
  /** Whether the current slice has had its time: a clock read, cheap enough to ask every few records. */
  due(): boolean;
  /** Lets the event loop run other work for a while (not at all when it has none), then starts a new slice. */
  rest(): Promise<void>;
  /**
   * Starts a new slice without a rest: the pass has just waited for I/O (a PostgreSQL statement),
   * and the loop was the requests' meanwhile.
   */
  waited(): void;
}

export function pace(): Pace {
  let sliceStart = performance.now();
  return {
    due: () => performance.now() - sliceStart >= SLICE_MS,
    async rest() {
      const start = performance.now();
      const until = start + Math.min(start - sliceStart, MAX_REST_MS) * REST_FACTOR;
      for (;;) {
        const before = performance.eventLoopUtilization();
        await new Promise((resolve) => setTimeout(resolve, LISTEN_MS));
        // The loop's idle time is the time it waited for I/O: mostly waiting means nobody needs it now.
        if (performance.eventLoopUtilization(before).utilization < 0.5 || performance.now() >= until) break;
      }
      sliceStart = performance.now();
    },
    waited: () => {
      sliceStart = performance.now();
    },
  };
}
