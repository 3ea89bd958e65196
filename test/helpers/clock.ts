import { clock } from '../../src/clock.ts';

let offset = 0;

/**
 * Moves the server's time forward, instead of sleeping, for the servers this test file started in
 * its own process (each test file has its own copy of the modules).
 */
export function advanceClock(ms: number): void {
  offset += ms;
  clock.now = () => Date.now() + offset;
}

/**
 * Stops the server's clock where it is, until `advanceClock` or `resetClock`: a test that makes many
 * requests inside a one-second delay cannot then be outrun by a slow machine.
 */
export function freezeClock(): void {
  const at = clock.now();
  clock.now = () => at;
}

/** The server's time now. */
export const serverNow = (): number => clock.now();

/**
 * Back to real time, for a test that moved the clock of a server it started and has finished with:
 * other processes (a second server spawned later) run on real time, and two nodes of one deployment
 * must agree on the time, as NTP makes them in production.
 */
export function resetClock(): void {
  offset = 0;
  clock.now = () => Date.now();
}
