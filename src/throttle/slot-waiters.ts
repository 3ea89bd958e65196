/**
 * Attempts waiting for a throttle slot that attempts in flight hold, by key. A slot freed in this
 * process wakes the first waiter on its key at once; a slot freed by another process is found by the
 * waiter's own poll (its timeout), so no process depends on another to be woken.
 */
export class SlotWaiters {
  private readonly queues = new Map<string, Array<() => void>>();

  /** Resolves when `key` is woken or after `ms`, whichever comes first. */
  wait(key: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const queue = this.queues.get(key) ?? [];
      this.queues.set(key, queue);
      const done = () => {
        clearTimeout(timer);
        const i = queue.indexOf(done);
        if (i >= 0) queue.splice(i, 1);
        if (queue.length === 0 && this.queues.get(key) === queue) this.queues.delete(key);
        resolve();
      };
      const timer = setTimeout(done, ms);
      queue.push(done);
    });
  }

  /** Wakes the longest-waiting attempt on `key`, if any. */
  wake(key: string): void {
    this.queues.get(key)?.[0]?.();
  }
}
