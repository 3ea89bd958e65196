import type { Request, Response } from 'express';
import { clock } from '../../clock.ts';
import type { AppContext } from '../../context.ts';
import { currentSession } from '../current-session.ts';
import { signInStrategies } from '../passport.ts';
import { signInAnswers } from './answers.ts';
import { consentStep } from './consent.ts';
import { enrolmentSteps } from './enrolment.ts';
import { freshSignIns } from './fresh.ts';
import type { Flow, SignedInNow, Step } from './step.ts';

export type { Flow, Step } from './step.ts';

/**
 * The browser sign-in, one step after another: password or an upstream identity provider (docs/upstream-identity-providers.md)
 * (→ a new password when the directory asks, docs/identity-backends.md) → second factor → enrolment → consent → continue. Each request answers the form it brings,
 * then finds the first step still missing; it says what to show, the route shows it.
 */
export function signInSteps(ctx: AppContext) {
  const answers = signInAnswers(ctx, signInStrategies(ctx.signIn));
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

      const tooOld = signedIn && flow.maxAge !== undefined && clock.now() - signedIn.session.authTime > flow.maxAge * 1000;
      if (!signedIn || (!fresh && (flow.prompt.has('login') || tooOld))) {
        if (flow.prompt.has('none')) return { show: 'refused', error: 'login_required', description: 'the user is not signed in' };
        // `idp` (docs/upstream-identity-providers.md): no chooser, straight to that upstream.
        return (await answers.upstream.direct(req, res, flow)) ?? { show: 'login', status: 200 };
      }
      const step = (await enrolment.demand(flow, signedIn)) ?? (await consent(req, posted, flow, signedIn));
      if (step.show === 'continue' || step.show === 'refused') freshness.clear(req, res);
      else if (fresh) freshness.mark(res, signedIn.session.id, flow.clientId);
      return step;
    },
  };
}

export type SignInSteps = ReturnType<typeof signInSteps>;
