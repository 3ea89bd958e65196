import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import type { Upstream, UpstreamFault } from '../../identity/upstreams/contract.ts';
import { ROUND_TRIP_TTL_MS } from '../../identity/upstreams/round-trips.ts';
import { attemptOf } from '../attempt.ts';
import { cookieOptions, readCookie, secureCookies } from '../cookies.ts';
import { checkCsrfToken } from '../csrf.ts';
import { upstreamStrategy, UpstreamRefusal } from '../passport.ts';
import { expiredForm } from '../refusals.ts';
import { startSession } from '../start-session.ts';
import { freshSignIns } from './fresh.ts';
import type { Flow, PageStep } from './step.ts';

/** The browser that went to an upstream: a random value whose hash keys the round trip (identity/upstreams/round-trips.ts). */
export const UPSTREAM_COOKIE = 'lk_upstream';

/**
 * Signing in at an upstream identity provider (docs/upstream-identity-providers.md), a step of the browser sign-in: the login
 * page's "Sign in with <name>" (or the authorize request's `idp`) sends the browser to the upstream
 * with the round trip stored and bound to this browser; the callback takes it (once), lets the
 * upstream's strategy check the answer, applies Latchkey's policy, starts the SSO session exactly
 * as a password does, and sends the browser back to the original request, whose own steps go on
 * (a second factor when the client needs one, consent, the code).
 */
export function upstreamSteps(ctx: AppContext) {
  const secure = secureCookies(ctx.config);
  const { trips, signIns } = ctx.upstreams;
  const freshness = freshSignIns(ctx);

  const failed = (upstream: Upstream, fault: UpstreamFault, retryAfter?: number): PageStep => ({
    show: 'upstream_error',
    status: retryAfter ? 429 : fault.unavailable ? 503 : 400,
    upstream: upstream.name,
    message: fault.unavailable
      ? `${upstream.name} cannot be reached right now (${fault.reason}). Please try again shortly.`
      : `${upstream.name}: ${fault.reason}.`,
    retryAfter,
  });

  /** What went wrong, from a strategy's refusal or fault. */
  const faultOf = (upstream: Upstream, err: unknown): UpstreamFault =>
    err instanceof UpstreamRefusal ? { unavailable: false, reason: err.message } : upstream.explain(err);

  /** Off to the upstream: the round trip stored, this browser's cookie set, then the redirect. */
  async function begin(req: Request, res: Response, upstream: Upstream, flow: Flow): Promise<PageStep> {
    const origin = attemptOf(req, flow.clientId);
    // Each start writes a round trip and may fetch the upstream's discovery: bounded per address.
    const wait = await signIns.starting(upstream, origin);
    if (wait > 0)
      return failed(upstream, { unavailable: false, reason: `too many sign-ins started from your network; retry after ${wait} s` }, wait);
    let away: Awaited<ReturnType<typeof upstreamStrategy.begin>>;
    try {
      away = await upstreamStrategy.begin(upstream, req, { ...(flow.prompt.has('login') ? { prompt: 'login' } : {}), maxAge: flow.maxAge });
    } catch (err) {
      const fault = faultOf(upstream, err);
      await signIns.refused(upstream, fault, origin);
      return failed(upstream, fault);
    }
    const token = await trips.start(upstream.id, { strategyState: away.state, resume: flow.resume, clientId: flow.clientId });
    res.cookie(UPSTREAM_COOKIE, token, cookieOptions(secure, ROUND_TRIP_TTL_MS));
    return { show: 'redirect', location: away.location };
  }

  return {
    /** The login page's "Sign in with <name>" (`_action=upstream`): CSRF-checked, then off to the upstream. */
    async chosen(req: Request, res: Response, form: Record<string, string>, flow: Flow): Promise<PageStep> {
      if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return { show: 'login', status: 403, error: expiredForm.signIn };
      const upstream = ctx.upstreams.find(form.upstream);
      if (!upstream) return { show: 'login', status: 400, error: 'That sign-in provider is not configured here.' };
      return begin(req, res, upstream, flow);
    },

    /** The authorize request's `idp` (validated with the request): straight to that upstream. */
    direct(req: Request, res: Response, flow: Flow): Promise<PageStep> | undefined {
      const upstream = ctx.upstreams.find(flow.idp);
      return upstream ? begin(req, res, upstream, flow) : undefined;
    },

    /** `GET /login/upstream/<id>/callback`: back from the upstream. Undefined for an id that is not configured. */
    async callback(req: Request, res: Response, upstreamId: string): Promise<PageStep | undefined> {
      const upstream = ctx.upstreams.find(upstreamId);
      if (!upstream) return undefined;
      const ip = req.ip ?? 'unknown';
      const retryAfter = await signIns.retryAfter(ip);
      if (retryAfter > 0)
        return failed(
          upstream,
          { unavailable: false, reason: `too many failed sign-ins from your network, retry after ${retryAfter} s` },
          retryAfter,
        );
      // The round trip is this browser's and used once: a replayed or forged callback finds nothing.
      const trip = await trips.take(readCookie(req, UPSTREAM_COOKIE), upstream.id);
      res.clearCookie(UPSTREAM_COOKIE, cookieOptions(secure));
      const origin = { ...attemptOf(req, trip?.clientId ?? ''), ip };
      const refuse = async (fault: UpstreamFault) => {
        await signIns.refused(upstream, fault, origin);
        return failed(upstream, fault);
      };
      if (!trip)
        return refuse({ unavailable: false, reason: 'this sign-in was not started in this browser, or was already used or expired' });
      const query = req.query as Record<string, unknown>;
      if (typeof query.code !== 'string' && typeof query.error !== 'string')
        return refuse({ unavailable: false, reason: 'the upstream sent no authorization code' });

      let checked: Awaited<ReturnType<typeof upstreamStrategy.callback>>;
      try {
        checked = await upstreamStrategy.callback(upstream, req, trip.strategyState);
      } catch (err) {
        // The upstream's metadata could not be read again (a restart since the redirect, and now it is down).
        return refuse(faultOf(upstream, err));
      }
      if (!checked.ok) return refuse(faultOf(upstream, checked.err));
      const outcome = await signIns.complete(upstream, checked.identity, origin);
      if (!outcome.ok) return failed(upstream, outcome.fault);
      const signedIn = await startSession(ctx, res, outcome.user, outcome.amr);
      // The resumed request may still say prompt=login, max_age or ForceAuthn, which this sign-in answered.
      freshness.mark(res, signedIn.session.id, trip.clientId);
      return { show: 'redirect', location: trip.resume };
    },
  };
}

export type UpstreamSteps = ReturnType<typeof upstreamSteps>;
