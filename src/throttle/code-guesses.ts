import type { Config } from '../config/schema.ts';
import { clock } from '../clock.ts';
import type { ThrottleQueries } from './throttle-queries.ts';
import { flatLadder } from './model.ts';

/**
 * Wrong second-factor codes per account over a long window (docs/decisions.md, "Second-factor guessing"): only
 * someone who knows the password reaches the code step, so the short brute-force window would let them
 * guess six-digit codes slowly forever. A right password or code clears nothing here; past
 * `codeMaxFailures` within `codeWindow` the code step takes only a recovery code or a passkey.
 */
export const codeGuesses = (queries: ThrottleQueries, policy: Config['throttle']) => {
  const ladder = flatLadder(policy.codeMaxFailures, policy.codeWindow * 1000, policy.codeWindow * 1000);
  const keyOf = (userId: string) => `m:${userId}`;
  return {
    /** Whether TOTP codes are refused for this account now. */
    async totpLocked(userId: string): Promise<boolean> {
      return (await queries.failures(keyOf(userId), ladder, clock.now())) >= ladder.free;
    },
    /** Counts a wrong code; true when this one reached the limit (the moment to tell the operator). */
    async failed(userId: string): Promise<boolean> {
      const now = clock.now();
      await queries.endAttempt([{ key: keyOf(userId), outcome: 'failed', ladder, held: false }], now);
      return (await queries.failures(keyOf(userId), ladder, now)) === ladder.free;
    },
  };
};

export type CodeGuesses = ReturnType<typeof codeGuesses>;
