import type { ChildProcess } from 'node:child_process';

/**
 * Stops a server the tests started and waits for it to exit: SIGTERM (after SIGCONT, for one a test
 * froze with SIGSTOP), then SIGKILL if it has not gone after `graceMs`.
 */
export async function stopProcess(c: ChildProcess | undefined, graceMs: number): Promise<void> {
  if (!c || c.exitCode !== null || c.signalCode !== null) return;
  const gone = new Promise((resolve) => c.once('exit', resolve));
  c.kill('SIGCONT');
  c.kill('SIGTERM');
  const late = setTimeout(() => c.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(late);
}
