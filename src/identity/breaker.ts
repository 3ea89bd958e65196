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
  logger: Logger;
}

/**
 * Whether a backend is worth asking (SPEC 7, "A hung directory"). The first call that finds the backend
 * down trips the breaker, having waited at most the backend's own timeout; from then on the chain skips
 * the backend at once (its users get `temporarily_unavailable`, other backends answer for theirs)
 * instead of making every sign-in wait out the same timeout again. A background probe, one at a time,
 * asks the backend until it answers, and only then are calls let through again.
 */
export class Breaker {
  private open = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: BreakerOptions) {}

  /** Tripped and not yet found answering by a probe. */
  get down(): boolean {
    return this.open;
  }

  trip(): void {
    if (this.open || this.stopped) return;
    this.open = true;
    this.o.logger.warn({ backend: this.o.id, probeEveryMs: this.o.intervalMs }, 'identity backend marked down; skipped until a probe finds it answering');
    this.schedule();
  }

  /** At shutdown: no further probes (one in flight finishes on its own and changes nothing). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    this.timer = setTimeout(() => void this.probeOnce(), this.o.intervalMs);
    // A process with nothing else to do must be free to exit while a backend is down.
    this.timer.unref();
  }

  private async probeOnce(): Promise<void> {
    this.timer = undefined;
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
    if (this.stopped) return;
    if (!up) return this.schedule();
    this.open = false;
    this.o.logger.info({ backend: this.o.id }, 'identity backend answers again');
  }
}
