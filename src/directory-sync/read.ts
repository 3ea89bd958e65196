/**
 * Reads a backend's directory whole, within a time limit (docs/directory-sync.md "Safety: a sync that
 * would remove too many"): anything short of a whole read throws, and nothing is changed then.
 */
import type { Identity, SyncSource } from '../identity/contract.ts';

/** The read stopped: too slow, or this process lost the lease meanwhile. */
export class ReadStopped extends Error {}

export async function readDirectory(source: SyncSource, o: { timeoutMs: number; stillHeld: () => boolean }): Promise<Identity[]> {
  const all: Identity[] = [];
  const pages = source.listUsers()[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ReadStopped(`the directory was not read whole within ${Math.round(o.timeoutMs / 1000)} s`)),
      o.timeoutMs,
    );
  });
  late.catch(() => undefined);
  let done = false;
  try {
    for (;;) {
      const page = await Promise.race([pages.next(), late]);
      if (page.done) {
        done = true;
        return all;
      }
      if (!o.stillHeld()) throw new ReadStopped('another process took over the sync lease (this one was too slow to renew it)');
      for (const identity of page.value) all.push(identity);
    }
  } finally {
    clearTimeout(timer);
    // A read stopped early lets the source close its searches; a hung source is not waited for.
    if (!done) void Promise.resolve(pages.return?.()).catch(() => undefined);
  }
}
