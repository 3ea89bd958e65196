const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits for a condition rather than for a guessed time: `check` is asked every `everyMs` until it
 * holds, and the wait fails, saying what was awaited, once `withinMs` has passed.
 */
export async function eventually(what: string, check: () => Promise<boolean>, { withinMs = 20_000, everyMs = 100 } = {}): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
    await sleep(everyMs);
  }
}

/** Runs `fn`; its result and how long it took, in milliseconds. */
export async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await fn();
  return [result, Math.round(performance.now() - start)];
}
