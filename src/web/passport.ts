import type { Request, Response } from 'express';
import { Passport, type Strategy } from 'passport';
import type { StrategyState, Upstream, UpstreamAsk, UpstreamIdentity } from '../identity/upstreams/contract.ts';
import type { SignInOutcome, SignInService } from '../login/sign-in.ts';
import type { KerberosOutcome, KerberosSignIns } from '../kerberos/service.ts';
import { NegotiateStrategy } from './strategies/negotiate.ts';
import { PasskeyStrategy } from './strategies/passkey.ts';
import { passwordStrategy } from './strategies/password.ts';
import { setSoFar, type SignInSoFar } from './strategies/so-far.ts';

/**
 * The browser's ways of signing in, one passport strategy each (strategies/), on their own Passport
 * instance: no global state, no passport session (the SSO session is ours). Every strategy ends in the
 * counted sign-in sequence (login/sign-in.ts) and answers with its outcome. An upstream identity
 * provider's strategy (openid-client/passport for OIDC, docs/upstream-identity-providers.md) is the upstream's own, run here too.
 */
export function signInStrategies(signIn: SignInService, kerberos: KerberosSignIns) {
  const passport = new Passport();
  passport.use('password', passwordStrategy(signIn));
  passport.use('passkey', new PasskeyStrategy(signIn));
  // docs/identity-backends.md "Desktop single sign-on": a Kerberos ticket; its own sign-in service, its own outcome.
  passport.use('negotiate', new NegotiateStrategy(kerberos));

  return {
    /** Runs one way of signing in on the sign-in so far; resolves with the sign-in outcome. */
    authenticate: (strategy: 'password' | 'passkey', req: Request, res: Response, soFar: SignInSoFar): Promise<SignInOutcome> =>
      new Promise((resolve, reject) => {
        setSoFar(res, soFar);
        passport.authenticate(
          strategy,
          { session: false },
          (err: unknown, ok: SignInOutcome | false, info?: { outcome?: SignInOutcome }) => {
            if (err) reject(err);
            // passport-local answers a missing field itself, before the sequence: a plain wrong-credentials.
            else resolve(ok || info?.outcome || { ok: false, reason: 'invalid_credentials' });
          },
        )(req, res, () => undefined);
      }),

    /** The request's `Authorization: Negotiate` token (strategies/negotiate.ts); resolves with its outcome. */
    negotiate: (req: Request, res: Response, soFar: SignInSoFar): Promise<KerberosOutcome> =>
      new Promise((resolve, reject) => {
        setSoFar(res, soFar);
        passport.authenticate(
          'negotiate',
          { session: false },
          (err: unknown, ok: KerberosOutcome | false, info?: { outcome?: KerberosOutcome }) => {
            if (err) reject(err);
            else resolve(ok || info?.outcome || { ok: false, reason: 'invalid_token' });
          },
        )(req, res, () => undefined);
      }),
  };
}

export type SignInStrategies = ReturnType<typeof signInStrategies>;

/** How a strategy ended: passport's five verbs, as a value. */
type StrategyEnd =
  | { end: 'success'; user: unknown }
  | { end: 'fail'; info: unknown }
  | { end: 'redirect'; url: string }
  | { end: 'error'; err: unknown };

interface Actions {
  success(user: unknown): void;
  fail(info?: unknown): void;
  redirect(url: string): void;
  error(err: unknown): void;
  pass(): void;
  authenticate(req: Request, options?: unknown): void;
}

/**
 * Runs a passport strategy as passport's own middleware does (a copy of it given the five verbs), but
 * answers with how it ended instead of writing the response: the sign-in step decides what to show,
 * and the redirect to an upstream goes out only once its state is stored.
 */
function runStrategy(strategy: Strategy, req: Request, options: unknown): Promise<StrategyEnd> {
  return new Promise((resolve) => {
    const run = Object.create(strategy) as Actions;
    run.success = (user) => resolve({ end: 'success', user });
    run.fail = (info) => resolve({ end: 'fail', info });
    run.redirect = (url) => resolve({ end: 'redirect', url });
    run.error = (err) => resolve({ end: 'error', err });
    run.pass = () => resolve({ end: 'error', err: new Error('the strategy passed the request on') });
    run.authenticate(req, options);
  });
}

/** Passport strategies keep a round trip's state in `req.session`; ours is a stored row (web/sign-in/upstream.ts). */
const withSession = (req: Request, session: Record<string, unknown>) =>
  Object.assign(req, { session }) as Request & { session: Record<string, unknown> };

/** An upstream's strategy, both legs (docs/upstream-identity-providers.md). */
export const upstreamStrategy = {
  /** The first leg: where to send the browser, and the state the callback needs. Throws on a fault. */
  async begin(upstream: Upstream, req: Request, ask: UpstreamAsk): Promise<{ location: string; state: StrategyState }> {
    const withState = withSession(req, {});
    const ended = await runStrategy(await upstream.strategy(), withState, upstream.authenticateOptions(ask));
    if (ended.end === 'error') throw ended.err;
    const state = withState.session[upstream.sessionKey] as StrategyState | undefined;
    if (ended.end !== 'redirect' || !state)
      throw new Error(`upstream "${upstream.id}": its strategy did not start a sign-in (${ended.end})`);
    return { location: ended.url, state };
  },

  /** The callback: who signed in, or the strategy's refusal (`fail`) or fault (`error`) as thrown. */
  async callback(
    upstream: Upstream,
    req: Request,
    state: StrategyState,
  ): Promise<{ ok: true; identity: UpstreamIdentity } | { ok: false; err: unknown }> {
    const ended = await runStrategy(await upstream.strategy(), withSession(req, { [upstream.sessionKey]: state }), { session: false });
    if (ended.end === 'success') return { ok: true, identity: ended.user as UpstreamIdentity };
    if (ended.end === 'fail') return { ok: false, err: new UpstreamRefusal(messageOf(ended.info)) };
    if (ended.end === 'error') return { ok: false, err: ended.err };
    return { ok: false, err: new UpstreamRefusal('the callback started a new sign-in') };
  },
};

/** A strategy's `fail`: the upstream refused (the user declined) or the state did not match. */
export class UpstreamRefusal extends Error {}

const messageOf = (info: unknown): string => {
  const m = (info as { message?: unknown } | undefined)?.message;
  return typeof m === 'string' && m ? `the upstream refused the sign-in: ${m}` : 'the upstream refused the sign-in';
};
