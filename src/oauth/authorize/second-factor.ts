import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { cookieOptions, readCookie, SSO_COOKIE } from '../../login/cookies.ts';
import { checkCsrfToken, issueCsrfToken } from '../../login/csrf.ts';
import { enrolTotpPage, passkeyForm, passkeyScriptTag, recoveryCodesPage, secondStepPage, type FormTarget } from '../../login/mfa-pages.ts';
import { pendingSignIns } from '../../login/pending-sign-in.ts';
import type { SignedIn } from '../../login/current-session.ts';
import { provedRecently } from '../../login/sessions.ts';
import { qrSvg } from '../../mfa/qr.ts';
import { withMfa, type Amr } from '../../mfa/service.ts';
import { DEVICE_COOKIE, deviceCookieOptions } from '../../throttle/device-cookie.ts';
import type { User } from '../../users/queries.ts';
import type { AuthorizeRequest } from './request.ts';

/**
 * The second factor inside the authorization request (SPEC 8): the second step after a right password
 * (carried by a pending sign-in bound to this browser, no session yet), the step-up of a
 * password-only session for a client that needs more, and the TOTP enrolment of a user who needs a
 * factor and has none. Every form posts back to the authorize endpoint with the request's own
 * parameters, as the login form does.
 */
export function secondFactorSteps(ctx: AppContext) {
  const secure = ctx.config.publicUrl.startsWith('https:');
  const pending = pendingSignIns(ctx.csrfKey, secure, ctx.sessions);
  const target = (req: Request, res: Response, a: AuthorizeRequest, extra: Record<string, string> = {}): FormTarget => ({
    action: req.baseUrl + req.path,
    fields: { ...a.carried, ...extra },
    csrfToken: issueCsrfToken(req, res, ctx.csrfKey, secure),
  });
  const send = (res: Response, status: number, html: string): void => void res.status(status).type('html').send(html);

  async function startSession(res: Response, user: User, amr: Amr[], deviceCookie: string): Promise<SignedIn> {
    const { cookie, session } = await ctx.sessions.create(user.id, amr);
    res.cookie(SSO_COOKIE, cookie, cookieOptions(secure));
    res.cookie(DEVICE_COOKIE, deviceCookie, deviceCookieOptions(secure));
    return { session, user };
  }

  async function askForCode(req: Request, res: Response, a: AuthorizeRequest, user: User, o: { pending?: string; status?: number; error?: string } = {}): Promise<void> {
    const passkey = await ctx.mfa.offersPasskey(user.id);
    send(res, o.status ?? 200, secondStepPage({ ...target(req, res, a, o.pending ? { pending: o.pending } : {}), username: user.username, error: o.error, passkey }));
  }

  async function askToEnrol(req: Request, res: Response, a: AuthorizeRequest, user: User, status = 200, error?: string): Promise<void> {
    const enrolment = (await ctx.mfa.pendingTotp(user)) ?? (await ctx.mfa.startTotp(user));
    if (!enrolment) return askForCode(req, res, a, user); // enrolled meanwhile (another tab)
    send(res, status, enrolTotpPage({ ...target(req, res, a), secret: enrolment.secret, qrSvg: await qrSvg(enrolment.uri), required: true, error }));
  }

  return {
    startSession,

    /** A right password of a user with a factor: the second step, the sign-in so far in its form, bound to this browser. */
    async secondStepAfterPassword(req: Request, res: Response, a: AuthorizeRequest, user: User): Promise<void> {
      return askForCode(req, res, a, user, { pending: await pending.begin(req, res, { userId: user.id, amr: ['pwd'], clientId: a.client.clientId }) });
    },

    /** The login page's passkey button (hidden unless the browser has WebAuthn and PUBLIC_URL allows passkeys). */
    loginPasskeyButton(fields: FormTarget): string {
      if (!ctx.mfa.passkeys.enabled) return '';
      return passkeyForm(fields, { purpose: 'login', action: 'passkey', label: 'Sign in with a passkey', options: '/passkey/options', secondary: true }) + passkeyScriptTag;
    },

    /**
     * A passkey's answer: alone from the login page (the credential names the user), at the second step
     * after a password, or to raise a session. `undefined` with a page sent, or an error for the login page.
     */
    async submitPasskey(req: Request, res: Response, a: AuthorizeRequest, form: Record<string, string>, current: SignedIn | undefined): Promise<{ signedIn: SignedIn; fresh: boolean } | { error: string; status: number } | undefined> {
      if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return { error: 'The sign-in form expired. Please try again.', status: 403 };
      const taken = form.pending ? await pending.take(req, form.pending, a.client.clientId) : undefined;
      if (form.pending && !taken) return { error: 'The sign-in form expired. Please sign in again.', status: 403 };
      const known = taken ? await ctx.users.find(taken.userId) : current?.user;
      const outcome = await ctx.signIn.passkeyStep({
        state: form.webauthn_state,
        response: form.webauthn_response,
        user: known,
        amr: taken?.amr ?? current?.session.amr ?? [],
        ip: req.ip ?? 'unknown',
        clientId: a.client.clientId,
        requestId: req.id,
        deviceCookie: readCookie(req, DEVICE_COOKIE),
      });
      if (!outcome.ok) {
        if (outcome.reason === 'throttled') res.setHeader('Retry-After', String(outcome.retryAfter));
        const [status, error] =
          outcome.reason === 'throttled'
            ? [429, `too many failed attempts, retry after ${outcome.retryAfter} s`]
            : outcome.reason === 'unavailable'
              ? [503, 'The directory is unreachable right now. Please try again shortly.']
              : [401, 'The passkey was not accepted.'];
        if (!known) return { error, status };
        await askForCode(req, res, a, known, { pending: await taken?.again(res), status, error });
        return undefined;
      }
      if (taken || !current) return { signedIn: await startSession(res, outcome.user, outcome.amr, outcome.deviceCookie), fresh: true };
      await ctx.sessions.setAmr(current.session.id, outcome.amr);
      return { signedIn: { ...current, session: { ...current.session, amr: outcome.amr } }, fresh: false };
    },

    /**
     * The second step's POST: after a password (a pending sign-in in the form) or on a session that
     * needs more. Answers with a page itself unless the user is now signed in with the factor.
     */
    async submitCode(req: Request, res: Response, a: AuthorizeRequest, form: Record<string, string>, current: SignedIn | undefined): Promise<{ signedIn: SignedIn; fresh: boolean } | undefined> {
      // Expired, forged, or another browser's: the caller shows the login page again. The CSRF check
      // comes first, so a forged post cannot use a pending sign-in up.
      if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return undefined;
      const taken = form.pending ? await pending.take(req, form.pending, a.client.clientId) : undefined;
      if (form.pending && !taken) return undefined;
      const user = taken ? await ctx.users.find(taken.userId) : current?.user;
      if (!user || user.disabled) return undefined;
      const outcome = await ctx.signIn.secondStep({
        user,
        code: form.code ?? '',
        amr: taken?.amr ?? current!.session.amr,
        ip: req.ip ?? 'unknown',
        clientId: a.client.clientId,
        requestId: req.id,
        deviceCookie: readCookie(req, DEVICE_COOKIE),
      });
      if (!outcome.ok) {
        const next = await taken?.again(res);
        if (outcome.reason === 'throttled') {
          res.setHeader('Retry-After', String(outcome.retryAfter));
          await askForCode(req, res, a, user, { pending: next, status: 429, error: `too many failed attempts, retry after ${outcome.retryAfter} s` });
        } else {
          await askForCode(req, res, a, user, { pending: next, status: 401, error: 'That code is not right. Try the current one, or a recovery code.' });
        }
        return undefined;
      }
      if (taken) return { signedIn: await startSession(res, user, outcome.amr, outcome.deviceCookie), fresh: true };
      await ctx.sessions.setAmr(current!.session.id, outcome.amr);
      res.cookie(DEVICE_COOKIE, outcome.deviceCookie, deviceCookieOptions(secure));
      return { signedIn: { ...current!, session: { ...current!.session, amr: outcome.amr } }, fresh: false };
    },

    /**
     * The policy (SPEC 8): a client that needs a second factor (or `mfa.required`), reached with a
     * session that has not used one. Answers with a page (the second step, or TOTP enrolment for a
     * user without a factor) and says `asked`; `none` when the session is good as it is. Enrolment
     * needs a proof within five minutes (SPEC 7, "Adding a factor"): an older session gets
     * `sign_in_again`, and the caller shows the login page.
     */
    async demand(req: Request, res: Response, a: AuthorizeRequest, signedIn: SignedIn): Promise<'none' | 'asked' | 'sign_in_again'> {
      if (!(ctx.config.mfa.required || a.client.requireMfa) || signedIn.session.amr.includes('mfa')) return 'none';
      if (await ctx.mfa.hasFactor(signedIn.user.id)) await askForCode(req, res, a, signedIn.user);
      else if (!provedRecently(signedIn.session)) return 'sign_in_again';
      else await askToEnrol(req, res, a, signedIn.user);
      return 'asked';
    },

    /**
     * The enrolment's POST (on a session proved within five minutes: the caller checks): a right
     * first code turns TOTP on, raises the session, ends the user's other sessions (SPEC 7), and
     * shows the recovery codes once.
     */
    async submitEnrolment(req: Request, res: Response, a: AuthorizeRequest, form: Record<string, string>, signedIn: SignedIn): Promise<void> {
      if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) return askToEnrol(req, res, a, signedIn.user, 403, 'The form expired. Please try again.');
      const codes = await ctx.mfa.confirmTotp(signedIn.user, form.code ?? '', { ip: req.ip, requestId: req.id, keep: signedIn.session.id });
      if (!codes) return askToEnrol(req, res, a, signedIn.user, 400, 'That code is not right: check the time on your phone and try the current one.');
      await ctx.sessions.setAmr(signedIn.session.id, withMfa([...signedIn.session.amr, 'otp']));
      send(res, 200, recoveryCodesPage({ ...target(req, res, a), codes, nextLabel: `Continue to ${a.client.name}` }));
    },
  };
}
