import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { checkCsrfToken } from '../csrf.ts';
import { secureCookies } from '../cookies.ts';
import type { SignedIn } from '../current-session.ts';
import type { SignInStrategies } from '../passport.ts';
import { pendingSignIns, type Pending } from '../pending-sign-in.ts';
import type { SignInOutcome } from '../../login/sign-in.ts';
import { expiredForm, refusalOf } from '../refusals.ts';
import { raiseSession, startSession } from '../start-session.ts';
import { attemptOf } from '../attempt.ts';
import { directoryChangeAnswer } from '../directory-password.ts';
import { askForCode, type Flow, type PageStep, type SignedInNow } from './step.ts';
import { freshSignIns } from './fresh.ts';
import { kerberosSteps } from './kerberos.ts';
import { upstreamSteps } from './upstream.ts';
import { originOf } from '../../http/origin.ts';

type Form = Record<string, string>;

/** What the change-password step says first, by what the directory said. */
const newPasswordWanted = {
  password_expired: 'Your password has expired. Choose a new one to continue.',
  password_must_change: 'Your password must be changed before you can sign in. Choose a new one to continue.',
  again: 'Your directory asks for a new password before you can sign in.',
} as const;

/**
 * The answers to the sign-in forms (docs/multi-factor-sign-in.md), wherever they are shown: the password, the second step's
 * code, a passkey. A right password of a user with a factor gives a pending sign-in bound to this
 * browser, used once (pending-sign-in.ts); a wrong code gets a new one in what is left of its time.
 */
export function signInAnswers(ctx: AppContext, strategies: SignInStrategies) {
  const upstream = upstreamSteps(ctx);
  const kerberos = kerberosSteps(ctx, strategies);
  const pending = pendingSignIns(ctx.csrfKey, secureCookies(ctx.config), ctx.sessions);
  const freshness = freshSignIns(ctx);
  // Expired, forged, or another browser's: the sign-in starts again (docs/decisions.md).
  const signInAgain: PageStep = { show: 'login', status: 403, error: expiredForm.signInAgain };

  /**
   * Where a counted password sign-in goes next: signed in (told first when the password expires soon,
   * docs/identity-backends.md), the second step, the change-password step, or the login page again with the refusal.
   */
  async function afterPassword(
    req: Request,
    res: Response,
    outcome: SignInOutcome,
    flow: Flow,
    username: string,
    typed: string,
  ): Promise<PageStep | SignedInNow> {
    if (outcome.ok) {
      const signedIn = await startSession(ctx, res, outcome.user, outcome.amr, outcome.deviceCookie);
      return expiring(res, signedIn, flow, outcome.passwordExpiresAt) ?? { signedIn, fresh: true };
    }
    if (outcome.reason === 'second_factor') {
      const started = await pending.begin(req, res, {
        userId: outcome.user.id,
        amr: ['pwd'],
        clientId: flow.clientId,
        passwordExpiresAt: outcome.passwordExpiresAt,
      });
      return askForCode(ctx, outcome.user, { pending: started });
    }
    const refusal = refusalOf(outcome, 'password');
    // Only a right password gets here with its user (docs/identity-backends.md): a wrong one never reaches the step.
    if (
      (outcome.reason === 'password_expired' || outcome.reason === 'password_must_change') &&
      'user' in outcome &&
      outcome.user &&
      ctx.identity.canWritePassword(outcome.user, 'change')
    ) {
      const started = await pending.begin(req, res, { userId: outcome.user.id, amr: ['pwd'], clientId: flow.clientId, oldPassword: typed });
      return {
        show: 'change_password',
        status: 200,
        notice: newPasswordWanted[outcome.reason],
        username: outcome.user.username,
        pending: started,
      };
    }
    return { show: 'login', status: refusal.status, error: refusal.message, username, retryAfter: refusal.retryAfter };
  }

  /**
   * docs/identity-backends.md: told once, right after the sign-in (after the second factor when there is one); its
   * "Continue" goes on with the request, as fresh as the sign-in it follows (fresh.ts).
   */
  function expiring(res: Response, signedIn: SignedIn, flow: Flow, expiresAt: number | undefined): PageStep | undefined {
    if (expiresAt === undefined) return undefined;
    freshness.mark(res, signedIn.session.id, flow.clientId);
    return { show: 'password_expiring', status: 200, expiresAt, mayChange: ctx.identity.canWritePassword(signedIn.user, 'change') };
  }

  async function password(req: Request, res: Response, form: Form, flow: Flow): Promise<PageStep | SignedInNow> {
    const username = (form.username ?? '').trim();
    if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return { show: 'login', status: 403, error: expiredForm.signIn, username };
    const outcome = await strategies.authenticate('password', req, res, { clientId: flow.clientId });
    return afterPassword(req, res, outcome, flow, username, form.password ?? '');
  }

  /**
   * The new password of a sign-in the directory refused as expired or must-change (docs/identity-backends.md): written
   * bound as the user with the old password the pending sign-in holds, then the sign-in goes on (the
   * second factor, consent, the code).
   */
  async function changePassword(req: Request, res: Response, form: Form, flow: Flow): Promise<PageStep | SignedInNow> {
    if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return signInAgain;
    const taken = await pending.take(req, form.pending, flow.clientId);
    const user = taken?.oldPassword !== undefined ? await ctx.users.find(taken.userId) : undefined;
    if (!taken || !user || user.disabled) return signInAgain;
    const ask = async (status: number, error: string): Promise<PageStep> => ({
      show: 'change_password',
      status,
      error,
      notice: newPasswordWanted.again,
      username: user.username,
      pending: await taken.again(res),
    });
    const newPassword = form.new_password ?? '';
    if (!newPassword) return ask(400, 'Type a new password.');
    if (newPassword !== form.new_password_again) return ask(400, 'The two new passwords are not the same.');
    // The users service writes it and ends every session and token of the old one, as at the account page (docs/decisions.md).
    const change = { oldPassword: taken.oldPassword!, newPassword, via: 'sign_in' as const };
    const changed = directoryChangeAnswer(await ctx.users.changeDirectoryPassword(user, change, originOf(req)));
    if (!changed.ok) return changed.wrongPassword ? signInAgain : ask(changed.status, changed.message);
    // Then the sign-in ends as any other, with the new password: counted (a success settles the
    // failure the expired attempt counted), the login metric, the device cookie, the second factor.
    const outcome = await ctx.signIn.signIn({ username: user.username, password: newPassword, ...attemptOf(req, flow.clientId) });
    return afterPassword(req, res, outcome, flow, user.username, newPassword);
  }

  /** A sign-in finished by its second factor: the expiry notice the password brought (docs/identity-backends.md), if any, first. */
  const started = (res: Response, signedIn: SignedIn, flow: Flow, taken: Pending | undefined): PageStep | SignedInNow =>
    expiring(res, signedIn, flow, taken?.passwordExpiresAt) ?? { signedIn, fresh: true };

  /** The second step's code: after a password (a pending sign-in in the form) or on a session that needs more. */
  async function code(req: Request, res: Response, form: Form, flow: Flow, current: SignedIn | undefined): Promise<PageStep | SignedInNow> {
    // The CSRF check comes first, so a forged post cannot use a pending sign-in up.
    if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return signInAgain;
    const taken = form.pending ? await pending.take(req, form.pending, flow.clientId) : undefined;
    // A pending change of password (docs/identity-backends.md) is no second step: the directory wants the new one first.
    if (form.pending && (!taken || taken.oldPassword !== undefined)) return signInAgain;
    const user = taken ? await ctx.users.find(taken.userId) : current?.user;
    if (!user || user.disabled) return signInAgain;
    const amr = taken?.amr ?? current!.session.amr;
    const outcome = await ctx.signIn.secondStep({ user, code: form.code ?? '', amr, ...attemptOf(req, flow.clientId) });
    if (!outcome.ok) return askForCode(ctx, user, { pending: await taken?.again(res), refusal: refusalOf(outcome, 'code') });
    if (taken) return started(res, await startSession(ctx, res, user, outcome.amr, outcome.deviceCookie), flow, taken);
    return { signedIn: await raiseSession(ctx, res, current!, outcome.amr, outcome.deviceCookie), fresh: false };
  }

  /** A passkey: alone from the login page (the credential names the user), after a password, or to raise a session. */
  async function passkey(
    req: Request,
    res: Response,
    form: Form,
    flow: Flow,
    current: SignedIn | undefined,
  ): Promise<PageStep | SignedInNow> {
    if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return { show: 'login', status: 403, error: expiredForm.signIn };
    const taken = form.pending ? await pending.take(req, form.pending, flow.clientId) : undefined;
    if (form.pending && (!taken || taken.oldPassword !== undefined)) return signInAgain;
    const known = taken ? await ctx.users.find(taken.userId) : current?.user;
    const amr = taken?.amr ?? current?.session.amr ?? [];
    const outcome = await strategies.authenticate('passkey', req, res, { clientId: flow.clientId, user: known, amr });
    if (!outcome.ok) {
      const refusal = refusalOf(outcome, 'passkey');
      if (!known) return { show: 'login', status: refusal.status, error: refusal.message, retryAfter: refusal.retryAfter };
      return askForCode(ctx, known, { pending: await taken?.again(res), refusal });
    }
    if (taken || !current) return started(res, await startSession(ctx, res, outcome.user, outcome.amr, outcome.deviceCookie), flow, taken);
    return { signedIn: await raiseSession(ctx, res, current, outcome.amr), fresh: false };
  }

  return {
    /** An upstream identity provider's callback (docs/upstream-identity-providers.md), and the authorize request's `idp`. */
    upstream,

    /** The login page for a browser without a session: with the Negotiate challenge when Kerberos is offered (kerberos.ts). */
    loginPage: kerberos.loginPage,

    /**
     * The answer to a posted sign-in form (`_action` login, mfa, passkey or upstream), or to a browser's
     * Kerberos ticket (`Authorization: Negotiate`, no form, no session); `undefined` for anything else.
     */
    answer(
      req: Request,
      res: Response,
      form: Form,
      flow: Flow,
      current: SignedIn | undefined,
    ): Promise<PageStep | SignedInNow> | undefined {
      if (form._action === 'login') return password(req, res, form, flow);
      if (form._action === 'change_password') return changePassword(req, res, form, flow);
      if (form._action === 'mfa') return code(req, res, form, flow, current);
      if (form._action === 'passkey') return passkey(req, res, form, flow, current);
      if (form._action === 'upstream') return upstream.chosen(req, res, form, flow);
      if (form._action === undefined && kerberos.brings(req, flow, current)) return kerberos.answer(req, res, flow);
      return undefined;
    },
  };
}

export type SignInAnswers = ReturnType<typeof signInAnswers>;
