/**
 * Attempts of this process waiting for throttle slots, in a line per key, in the order they came.
 *
 * An attempt that has to wait stands in the line of the key that refused it (a key whose slots are all
 * held), with the number it drew when it first waited; refused later by another key, it moves to that
 * key's line, keeping its number, so it never loses its turn. A newcomer stands in the line of the
 * first of its keys that has one. Only the first in a line asks the database, so a newcomer never
 * overtakes a waiter of the key it waits on. An attempt stands in one line at a time: only a key that
 * refused it holds it back, so the attempts of one busy account never hold back those of another
 * account behind the same address (a line on the address key forms only while that key is full).
 * Without the lines, a waiter's every poll sent it to the back and every newcomer asked before it, so
 * under a sustained burst of right passwords on one account (32 at a time) an unlucky one waited out
 * `slotWait` and was refused while later ones went through.
 *
 * A slot freed in this process wakes the first in its key's line at once; a slot freed by another
 * process is found by the first's own poll (its pause), so no process depends on another to be woken.
 */
export class SlotWaiters {
  private readonly lines = new Map<string, Place[]>();
  private drawn = 0;

  /** Whether attempts of this process are waiting on `key`. */
  waiting(key: string): boolean {
    return (this.lines.get(key)?.length ?? 0) > 0;
  }

  /** A new number, standing in the line of `key`. */
  join(key: string): Place {
    const place = new Place(this, ++this.drawn);
    place.standIn(key);
    return place;
  }

  /** A slot of `key` was freed in this process: the first in its line asks now. */
  wake(key: string): void {
    this.lines.get(key)?.[0]?.wake();
  }

  /** @internal Whether `place` is first in `key`'s line. */
  isFirst(key: string, place: Place): boolean {
    return this.lines.get(key)?.[0] === place;
  }

  /** @internal `place` into `key`'s line, before every later number. */
  enter(key: string, place: Place): void {
    const line = this.lines.get(key) ?? [];
    this.lines.set(key, line);
    const at = line.findIndex((p) => p.number > place.number);
    line.splice(at < 0 ? line.length : at, 0, place);
  }

  /** @internal `place` out of `key`'s line; its new first, if that changed, asks at once. */
  exit(key: string, place: Place): void {
    const line = this.lines.get(key);
    const i = line?.indexOf(place) ?? -1;
    if (!line || i < 0) return;
    line.splice(i, 1);
    if (line.length === 0) this.lines.delete(key);
    else if (i === 0) line[0]!.wake();
  }
}

/** One attempt's number and the line it stands in. */
export class Place {
  private key: string | undefined;
  private resolve: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Woken while not waiting (asking the database, say): the next wait returns at once, so no wake is lost. */
  private woken = false;

  constructor(
    private readonly waiters: SlotWaiters,
    readonly number: number,
  ) {}

  /** First in its line: its turn to ask. */
  get first(): boolean {
    return this.key === undefined || this.waiters.isFirst(this.key, this);
  }

  /** Stands in `key`'s line (leaving the one it stood in), keeping its number. */
  standIn(key: string | undefined): void {
    if (key === this.key) return;
    if (this.key !== undefined) this.waiters.exit(this.key, this);
    this.key = key;
    if (key !== undefined) this.waiters.enter(key, this);
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

  /** Out of its line (its slots taken, or given up): the next, now first, asks at once. */
  leave(): void {
    clearTimeout(this.timer);
    this.standIn(undefined);
  }
}
