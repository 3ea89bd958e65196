import type { Request, Response } from 'express';
import { Passport } from 'passport';
import { Strategy as LocalStrategy } from 'passport-local';
import { DEVICE_COOKIE } from '../throttle/device-cookie.ts';
import { readCookie } from './cookies.ts';
import type { SignInOutcome, SignInService } from './sign-in.ts';

/**
 * passport-local in front of the sign-in sequence, as its own Passport instance (no global state, no
 * passport session: the SSO session is ours). Resolves with the sign-in outcome.
 */
export function passwordAuthenticator(signIn: SignInService) {
  const passport = new Passport();
  /** The client each pending sign-in is for: passport hands the strategy the request only. */
  const clientOf = new WeakMap<Request, string>();
  passport.use(
    new LocalStrategy({ session: false, passReqToCallback: true }, (req, username, password, done) => {
      signIn
        .signIn({ username, password, ip: req.ip ?? 'unknown', clientId: clientOf.get(req) ?? '', requestId: req.id, deviceCookie: readCookie(req, DEVICE_COOKIE) })
        .then(
          (outcome) => (outcome.ok ? done(null, outcome) : done(null, false, { outcome } as never)),
          (err: unknown) => done(err),
        );
    }),
  );
  return (req: Request, res: Response, clientId: string): Promise<SignInOutcome> =>
    new Promise((resolve, reject) => {
      clientOf.set(req, clientId);
      passport.authenticate('local', { session: false }, (err: unknown, ok: SignInOutcome | false, info?: { outcome?: SignInOutcome }) => {
        if (err) reject(err);
        // passport-local answers a missing field itself, before the chain: a plain wrong-credentials.
        else resolve(ok || info?.outcome || { ok: false, reason: 'invalid_credentials' });
      })(req, res, () => undefined);
    });
}
