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
   * A failure that came back within this (a refused connection, a closed socket) is quick: trying the
   * backend again costs a caller nothing, so the next call may (half-open). A slower one (a hang cut
   * off by the backend's timeout) leaves the backend to the probe. @default 250
   */
  quickFailureMs?: number;
  logger: Logger;
}

/** How a call may go to the backend: it is up, or it is the one trial of a backend marked down. */
export type Admission = 'closed' | 'trial';

/**
 * Whether a backend is worth asking (SPEC 7, "A hung directory"). The first call that finds the backend
 * down trips the breaker, having waited at most the backend's own timeout; from then on the chain skips
 * the backend at once (its users get `temporarily_unavailable`, other backends answer for theirs)
 * instead of making every sign-in wait out the same timeout again. A background probe, one at a time,
 * asks the backend until it answers, and then calls are let through again.
 *
 * Half-open (SPEC 7 "A directory back from an outage"): while the backend fails quickly (stopped, its
 * port refusing), one call at a time is let through as a trial, so the first sign-in after the
 * directory returns succeeds instead of waiting for the probe's next turn. A backend that failed by
 * hanging gets no trials: only the probe may spend its timeout.
 */
export class Breaker {
  private open = false;
  private quick = false;
  private trying = false;
  private probing = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: BreakerOptions) {}

  /** Tripped and not yet found answering by a probe or a trial. */
  get down(): boolean {
    return this.open;
  }

  /**
   * Whether a call may go to the backend now: always while it is up; while it is down, as the one
   * trial in flight when its last failure was quick; else not (false: skip it at once).
   */
  admit(): Admission | false {
    if (!this.open) return 'closed';
    if (!this.quick || this.trying || this.stopped) return false;
    this.trying = true;
    return 'trial';
  }

  /** A call let through by `admit()` is over: a trial that got an answer closes the breaker. */
  settle(admission: Admission, answered: boolean): void {
    if (admission !== 'trial') return;
    this.trying = false;
    if (answered && this.open) this.close('a sign-in found it answering');
  }

  /** A call found the backend down after `costMs`: marked down (if it was not), probed until it answers. */
  trip(costMs = Number.POSITIVE_INFINITY): void {
    if (this.stopped) return;
    this.quick = costMs < (this.o.quickFailureMs ?? 250);
    if (this.open) return;
    this.open = true;
    this.o.logger.warn({ backend: this.o.id, probeEveryMs: this.o.intervalMs, halfOpen: this.quick }, 'identity backend marked down; skipped until a probe or a trial finds it answering');
    this.schedule();
  }

  private close(by: string): void {
    this.open = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.o.logger.info({ backend: this.o.id, by }, 'identity backend answers again');
  }

  /** At shutdown: no further probes (one in flight finishes on its own and changes nothing). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The next probe, unless one is waiting or running already: one probe at a time. */
  private schedule(): void {
    if (this.timer || this.probing) return;
    this.timer = setTimeout(() => void this.probeOnce(), this.o.intervalMs);
    // A process with nothing else to do must be free to exit while a backend is down.
    this.timer.unref();
  }

  private async probeOnce(): Promise<void> {
    this.timer = undefined;
    this.probing = true;
    let late: NodeJS.Timeout | undefined;
    let up: boolean;
    try {
      const timeout = new Promise<boolean>((resolve) => (late = setTimeout(() => resolve(false), this.o.probeTimeoutMs)));
      up = await Promise.race([this.o.probe(), timeout]);
    } catch {
      up = false;
    } finally {
      clearTimeout(late);
      this.probing = false;
    }
    // A trial may have closed the breaker meanwhile: then this probe has nothing left to do.
    if (this.stopped || !this.open) return;
    if (!up) return this.schedule();
    this.close('the probe found it answering');
  }
}
