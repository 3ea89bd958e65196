import type { ChildProcess } from 'node:child_process';
import type { Client } from 'ldapts';

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

/**
 * Binds as `dn` on a fresh connection and says how the directory answered: `success`, or its error
 * message (a refusal's words, as a test asserts them).
 */
export async function rawBind(client: Client, dn: string, password: string): Promise<string> {
  try {
    await client.bind(dn, password);
    return 'success';
  } catch (err) {
    return (err as Error).message;
  } finally {
    await client.unbind().catch(() => undefined);
  }
}
