import type { Request, Response } from 'express';
import { Passport } from 'passport';
import { Strategy as LocalStrategy } from 'passport-local';
import type { IdentityChain, SignInResult } from '../identity/chain.ts';

/**
 * passport-local in front of the identity chain, as its own Passport instance (no global state, no
 * passport session: the SSO session is ours). Resolves with the chain's verdict.
 */
export function passwordAuthenticator(identity: IdentityChain) {
  const passport = new Passport();
  passport.use(
    new LocalStrategy({ session: false }, (username, password, done) => {
      identity.signIn(username, password).then(
        (result) => (result.ok ? done(null, result) : done(null, false, { message: result.reason, result } as never)),
        (err: unknown) => done(err),
      );
    }),
  );
  return (req: Request, res: Response): Promise<SignInResult> =>
    new Promise((resolve, reject) => {
      passport.authenticate('local', { session: false }, (err: unknown, ok: SignInResult | false, info?: { result?: SignInResult }) => {
        if (err) reject(err);
        // passport-local answers a missing field itself, before the chain: a plain wrong-credentials.
        else resolve(ok || info?.result || { ok: false, reason: 'invalid_credentials' });
      })(req, res, () => undefined);
    });
}
