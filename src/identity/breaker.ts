import type { Logger } from 'pino';

export interface BreakerOptions {
  /** The backend's configured id, for log lines. */
  id: string;
  /** Whether the backend answers now; a backend without `health()` is simply tried again. */
  probe: () => Promise<boolean>;
  /** Pause between the end of one probe and the start of the next. */
  intervalMs: number;
  /** A probe that has not answered by then counts as "still down": a hung probe must not end probing. */
  probeTimeoutMs: number;
  /**
   * How long a call that finds the backend down waits for a probe started for it (half-open): the
   * most a sign-in pays for finding out whether the backend is back. @default 250
   */
  trialWaitMs?: number;
  logger: Logger;
}

/**
 * Whether a backend is worth asking (docs/decisions.md, "A hung directory"). The first call that finds the backend
 * down trips the breaker, having waited at most the backend's own timeout; from then on the chain skips
 * the backend (its users get `temporarily_unavailable`, other backends answer for theirs) instead of
 * making every sign-in wait out the same timeout again. A background probe, one at a time, asks the
 * backend until it answers, and then calls are let through again.
 *
 * Half-open (docs/decisions.md "A directory back from an outage"): a call that finds the backend down starts the
 * probe at once (or joins the one running) and waits for it a moment (`trialWaitMs`): if the backend
 * answers, the breaker closes and the call goes ahead. The first sign-in after a directory returns
 * therefore succeeds instead of waiting for the probe's next turn, while a hung directory costs a
 * caller at most that moment (its probe hangs, and calls meanwhile wait only that moment for it).
 */
export class Breaker {
  private open = false;
  private probing: Promise<void> | undefined;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: BreakerOptions) {}

  /** Tripped and not yet found answering by a probe. */
  get down(): boolean {
    return this.open;
  }

  /** Whether a call may go to the backend now: it is up, or a probe started for this call found it up. */
  async admit(): Promise<boolean> {
    if (!this.open) return true;
    if (this.stopped) return false;
    let waited: NodeJS.Timeout | undefined;
    const moment = new Promise<void>((resolve) => (waited = setTimeout(resolve, this.o.trialWaitMs ?? 250)));
    await Promise.race([this.probeNow(), moment]);
    clearTimeout(waited);
    return !this.open;
  }

  /** A call found the backend down: marked down (if it was not), and probed until it answers. */
  trip(): void {
    if (this.open || this.stopped) return;
    this.open = true;
    this.o.logger.warn(
      { backend: this.o.id, probeEveryMs: this.o.intervalMs },
      'identity backend marked down; skipped until a probe finds it answering',
    );
    this.schedule();
  }

  /** At shutdown: no further probes (one in flight finishes on its own and changes nothing). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The next probe after the pause, unless one is waiting or running: one probe at a time. */
  private schedule(): void {
    if (this.timer || this.probing || this.stopped) return;
    this.timer = setTimeout(() => void this.probeNow(), this.o.intervalMs);
    // A process with nothing else to do must be free to exit while a backend is down.
    this.timer.unref();
  }

  /** A probe now (the waiting one is brought forward); the one running is shared. */
  private probeNow(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.probing ??= this.probeOnce().finally(() => {
      this.probing = undefined;
      // Still down: the next turn, once this one has let go.
      if (this.open) this.schedule();
    });
    return this.probing;
  }

  private async probeOnce(): Promise<void> {
    let late: NodeJS.Timeout | undefined;
    let up: boolean;
    try {
      const timeout = new Promise<boolean>((resolve) => (late = setTimeout(() => resolve(false), this.o.probeTimeoutMs)));
      up = await Promise.race([this.o.probe(), timeout]);
    } catch {
      up = false;
    } finally {
      clearTimeout(late);
    }
    if (this.stopped || !this.open || !up) return;
    this.open = false;
    this.o.logger.info({ backend: this.o.id }, 'identity backend answers again');
  }
}
