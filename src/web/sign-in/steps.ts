import type { Request, Response } from 'express';
import { clock } from '../../clock.ts';
import type { AppContext } from '../../context.ts';
import { provedRecently } from '../../login/sessions.ts';
import { originOf } from '../../http/origin.ts';
import { currentSession } from '../current-session.ts';
import { signInStrategies } from '../passport.ts';
import { signInAnswers } from './answers.ts';
import { consentStep } from './consent.ts';
import { enrolmentSteps } from './enrolment.ts';
import { freshSignIns } from './fresh.ts';
import { sessionStep, signInStep, type SignInFacts } from './next-step.ts';
import type { Flow, SignedInNow, Step } from './step.ts';

export type { Flow, Step } from './step.ts';

/**
 * The browser sign-in, one step after another: password or an upstream identity provider (docs/upstream-identity-providers.md)
 * (→ a new password when the directory asks, docs/identity-backends.md) → the application's access policy
 * (docs/access-and-claims.md) → second factor → enrolment → consent → continue. Each request answers the form it brings,
 * then finds the first step still missing by the rules of next-step.ts (pure, tested alone); it says what to show, the route shows it.
 */
export function signInSteps(ctx: AppContext) {
  const answers = signInAnswers(ctx, signInStrategies(ctx.signIn, ctx.kerberos));
  const enrolment = enrolmentSteps(ctx);
  const consent = consentStep(ctx);
  const freshness = freshSignIns(ctx);

  return {
    answers,

    async next(req: Request, res: Response, form: Record<string, string>, flow: Flow): Promise<Step> {
      const posted = req.method === 'POST' ? form : {};
      let signedIn = await currentSession(ctx, req);
      let fresh = false;
      const answered: Step | SignedInNow | undefined =
        posted._action === 'enrol' && enrolment.mayEnrol(signedIn)
          ? await enrolment.enrol(req, posted, signedIn)
          : // An older session's enrolment falls through: it is asked for its password again below.
            await answers.answer(req, res, posted, flow, signedIn);
      if (answered && 'show' in answered) return answered;
      if (answered) ({ signedIn, fresh } = answered);
      // A sign-in that has just happened for this request, continued (fresh.ts).
      if (signedIn && !fresh) fresh = freshness.holds(req, signedIn.session.id, flow.clientId);

      // The rules (next-step.ts) decide; this shows what they decided.
      const scopes = signedIn ? flow.scopesFor(signedIn.user) : [];
      const facts: SignInFacts = {
        prompt: flow.prompt,
        maxAge: flow.maxAge,
        now: clock.now(),
        upstream: ctx.upstreams.find(flow.idp) !== undefined,
        session: signedIn && {
          authTime: signedIn.session.authTime,
          amr: signedIn.session.amr,
          fresh,
          provedRecently: provedRecently(signedIn.session),
        },
        application: flow.application !== undefined,
        mfaRequired: flow.needsMfa,
        consentRequired: flow.requireConsent,
        consentAnswered: posted._action === 'consent',
        scopes,
      };
      const signIn = signInStep(facts);
      if (signIn?.kind === 'refused') return { show: 'refused', error: 'login_required', description: 'the user is not signed in' };
      // `idp` (docs/upstream-identity-providers.md): no chooser, straight to that upstream.
      if (signIn?.kind === 'upstream') return (await answers.upstream.direct(req, res, flow)) ?? { show: 'login', status: 200 };
      // (Without a session the rules always answer a sign-in.) A browser without one is asked for a
      // Kerberos ticket too, when offered (kerberos.ts); one whose session must sign in again is not.
      if (!signedIn) return answers.loginPage(flow);
      if (signIn) return { show: 'login', status: 200 };

      const current = signedIn;
      const app = flow.application;
      let next = sessionStep(facts);
      // The facts that cost a read, when the rules get that far. The access policy is checked on
      // every request of a flow, an existing session's too (docs/access-and-claims.md); a refusal is audited.
      while (next.kind === 'ask') {
        if (next.fact === 'allowed') facts.allowed = !app || (await ctx.access.check(app, current.user, originOf(req))).allowed;
        else if (next.fact === 'hasFactor') facts.hasFactor = await ctx.mfa.hasFactor(current.user.id);
        else facts.granted = await ctx.consents.granted(current.user.id, flow.clientId);
        next = sessionStep(facts);
      }
      let step: Step;
      switch (next.kind) {
        case 'access_denied':
          step = { show: 'access_denied', status: 403, application: app?.name ?? '', username: current.user.username };
          break;
        case 'refused':
          step =
            next.error === 'consent_required'
              ? { show: 'refused', error: 'consent_required', description: 'the user has not consented to these scopes' }
              : { show: 'refused', error: 'login_required', description: 'this application needs a second factor' };
          break;
        case 'second_factor':
        case 'sign_in_again':
        case 'enrol':
          step = await enrolment.step(next.kind, current.user);
          break;
        // The consent form's answer (consent.ts).
        case 'answer_consent':
          step = await consent(req, posted, flow, current);
          break;
        case 'consent':
          step = { show: 'consent', status: 200, user: current.user, scopes };
          break;
        case 'continue':
          step = { show: 'continue', signedIn: current, scopes };
          break;
      }
      if (step.show === 'continue' || step.show === 'refused' || step.show === 'access_denied') freshness.clear(req, res);
      else if (fresh) freshness.mark(res, current.session.id, flow.clientId);
      return step;
    },
  };
}

export type SignInSteps = ReturnType<typeof signInSteps>;
