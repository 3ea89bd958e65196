/**
 * Attempts of this process waiting for a throttle slot, in a line per key, first come first served.
 * An attempt keeps its place from the moment it first has to wait until it takes its slots or gives
 * up: only the first in line asks the database, and a newcomer never overtakes a waiter. Without the
 * line, a waiter's every poll sent it to the back and every newcomer asked before it, so under a
 * sustained burst of right passwords on one account (32 at a time) an unlucky one waited out
 * `slotWait` and was refused while later ones went through.
 *
 * A slot freed in this process wakes the first in line at once; a slot freed by another process is
 * found by the first in line's own poll (its pause), so no process depends on another to be woken.
 */
export class SlotWaiters {
  private readonly lines = new Map<string, Place[]>();

  /** Whether attempts of this process are waiting on `key`. */
  waiting(key: string): boolean {
    return (this.lines.get(key)?.length ?? 0) > 0;
  }

  /** A place at the back of `key`'s line. */
  join(key: string): Place {
    const line = this.lines.get(key) ?? [];
    this.lines.set(key, line);
    const place = new Place(key, line, () => {
      if (line.length === 0 && this.lines.get(key) === line) this.lines.delete(key);
    });
    line.push(place);
    return place;
  }

  /** A slot of `key` was freed in this process: the first in line asks now. */
  wake(key: string): void {
    this.lines.get(key)?.[0]?.wake();
  }
}

/** One attempt's place in a key's line. */
export class Place {
  private resolve: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Woken while not waiting (asking the database, say): the next wait returns at once, so no wake is lost. */
  private woken = false;

  constructor(
    readonly key: string,
    private readonly line: Place[],
    private readonly emptied: () => void,
  ) {}

  get first(): boolean {
    return this.line[0] === this;
  }

  /** Until woken or `ms` have passed, whichever comes first. */
  wait(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.resolve = resolve;
      this.timer = setTimeout(() => this.wake(), ms);
    });
  }

  wake(): void {
    clearTimeout(this.timer);
    const resolve = this.resolve;
    this.resolve = undefined;
    if (resolve) resolve();
    else this.woken = true;
  }

  /** Out of the line (its slots taken, or given up): the next in line, now first, asks at once. */
  leave(): void {
    const i = this.line.indexOf(this);
    if (i < 0) return;
    this.line.splice(i, 1);
    clearTimeout(this.timer);
    if (i === 0) this.line[0]?.wake();
    this.emptied();
  }
}
