/**
 * Everything the bench starts or creates registers how to undo it here, so that a failed step, an
 * exception or Ctrl-C leaves no server, peer, slapd or temp database behind. Steps run last-in,
 * first-out (a database is dropped only after the server using it has stopped).
 */
type Step = { name: string; run: () => Promise<void> | void; sync?: () => void };

const steps: Step[] = [];
let running: Promise<void> | undefined;
let signalled: string | undefined;

/** The signal that stopped the run, if one did: what fails after it is no news. */
export const interruptedBy = (): string | undefined => signalled;

/**
 * Registers an undo step; returns a function that forgets it (for a step its owner already did).
 * `sync` is a last resort for the 'exit' event, where nothing asynchronous can run (e.g. SIGKILL a
 * process group).
 */
export function onCleanup(name: string, run: () => Promise<void> | void, sync?: () => void): () => void {
  const step: Step = { name, run, sync };
  steps.push(step);
  return () => {
    const i = steps.indexOf(step);
    if (i >= 0) steps.splice(i, 1);
  };
}

/** Runs every registered step, newest first; a failing step is reported and the others still run. */
export function cleanupAll(): Promise<void> {
  running ??= (async () => {
    while (steps.length > 0) {
      const step = steps.pop()!;
      try {
        await step.run();
      } catch (err) {
        process.stderr.write(`bench: cleanup "${step.name}" failed: ${(err as Error).message}\n`);
      }
    }
  })();
  return running;
}

/**
 * Ctrl-C, a terminal closing or a polite kill: clean up, then exit with the conventional 128+n code.
 * The children run in their own process groups (see processes.ts), so the terminal's SIGINT does not
 * reach them: this handler is what stops them.
 */
export function installSignalHandlers(): void {
  const codes: Record<string, number> = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 };
  for (const [signal, code] of Object.entries(codes)) {
    process.on(signal, () => {
      if (running) return; // already cleaning up: a second Ctrl-C does not cut the cleanup short
      signalled = signal;
      process.stderr.write(`\nbench: ${signal}, stopping everything it started…\n`);
      void cleanupAll().finally(() => process.exit(code));
    });
  }
  // process.exit() from anywhere else: no await possible, so kill what is still registered, hard.
  process.on('exit', () => {
    for (const step of steps.splice(0).reverse()) step.sync?.();
  });
}
