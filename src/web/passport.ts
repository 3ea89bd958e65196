import type { Request, Response } from 'express';
import { Passport } from 'passport';
import type { SignInOutcome, SignInService } from '../login/sign-in.ts';
import { PasskeyStrategy } from './strategies/passkey.ts';
import { passwordStrategy } from './strategies/password.ts';
import { setSoFar, type SignInSoFar } from './strategies/so-far.ts';

/**
 * The browser's ways of signing in, one passport strategy each (strategies/), on their own Passport
 * instance: no global state, no passport session (the SSO session is ours). Every strategy ends in the
 * counted sign-in sequence (login/sign-in.ts) and answers with its outcome. The upstream providers'
 * strategy (openid-client/passport) joins here.
 */
export function signInStrategies(signIn: SignInService) {
  const passport = new Passport();
  passport.use('password', passwordStrategy(signIn));
  passport.use('passkey', new PasskeyStrategy(signIn));

  return {
    /** Runs one way of signing in on the sign-in so far; resolves with the sign-in outcome. */
    authenticate: (strategy: 'password' | 'passkey', req: Request, res: Response, soFar: SignInSoFar): Promise<SignInOutcome> =>
      new Promise((resolve, reject) => {
        setSoFar(res, soFar);
        passport.authenticate(strategy, { session: false }, (err: unknown, ok: SignInOutcome | false, info?: { outcome?: SignInOutcome }) => {
          if (err) reject(err);
          // passport-local answers a missing field itself, before the sequence: a plain wrong-credentials.
          else resolve(ok || info?.outcome || { ok: false, reason: 'invalid_credentials' });
        })(req, res, () => undefined);
      }),
  };
}

export type SignInStrategies = ReturnType<typeof signInStrategies>;
