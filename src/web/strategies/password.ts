import { Strategy as LocalStrategy } from 'passport-local';
import type { SignInService } from '../../login/sign-in.ts';
import { soFarOf } from './so-far.ts';

/**
 * The login form's `username` and `password` (passport-local), through the counted sign-in sequence.
 * A refusal is an answer (`info.outcome`); only an outage or a bug is an error.
 */
export const passwordStrategy = (signIn: SignInService) =>
  new LocalStrategy({ session: false, passReqToCallback: true }, (req, username, password, done) => {
    signIn.signIn({ username, password, ...soFarOf(req).origin }).then(
      (outcome) => (outcome.ok ? done(null, outcome) : done(null, false, { outcome } as never)),
      (err: unknown) => done(err),
    );
  });
