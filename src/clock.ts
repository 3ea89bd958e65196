/**
 * The server's time. Everything that decides by time (expiry of codes, tokens and sessions, the
 * brute-force windows and delays, key activation, audit timestamps) reads it here, so that a test
 * moves time forward instead of sleeping (test/helpers/clock.ts). Timers and network timeouts keep
 * real time.
 */
export const clock = {
  now: (): number => Date.now(),
};
