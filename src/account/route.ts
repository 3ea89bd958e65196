import type { Request, RequestHandler, Response } from 'express';
import type { Actor } from '../audit/record.ts';
import { clock } from '../clock.ts';
import type { AppContext } from '../context.ts';
import { sendPageError } from '../http/page-errors.ts';
import { cookieOptions, readCookie, SSO_COOKIE } from '../login/cookies.ts';
import { checkCsrfToken, issueCsrfToken } from '../login/csrf.ts';
import { currentSession, type SignedIn } from '../login/current-session.ts';
import { enrolTotpPage, passkeyForm, passkeyScriptTag, recoveryCodesPage, secondStepPage } from '../login/mfa-pages.ts';
import { loginPage, signedOutPage } from '../login/pages.ts';
import { passwordAuthenticator } from '../login/passport.ts';
import { pendingSignIns } from '../login/pending-sign-in.ts';
import { provedRecently } from '../login/sessions.ts';
import { qrSvg } from '../mfa/qr.ts';
import { InputError } from '../service-errors.ts';
import { DEVICE_COOKIE, deviceCookieOptions } from '../throttle/device-cookie.ts';
import type { User } from '../users/queries.ts';
import { accountPage, proofPage } from './pages.ts';

/** Sign-ins at the account page belong to no client application. */
const NO_CLIENT = '';

/**
 * `/account` and `/account/mfa/totp` (SPEC 8): the signed-in user's own page. Without a session, the
 * account page signs the user in itself (password, then the second step), then shows the account.
 * Every form carries a CSRF token; removing a factor, new recovery codes and a new password ask for
 * the password or a current code again, counted by the brute-force policy like any sign-in. Adding a
 * factor needs such a proof within five minutes, and every change of the factors or the password
 * ends the user's other sessions (SPEC 7); the session that made it stays.
 */
export function accountHandlers(ctx: AppContext): { account: RequestHandler; totp: RequestHandler } {
  const secure = ctx.config.publicUrl.startsWith('https:');
  const authenticate = passwordAuthenticator(ctx.signIn);
  const csrf = (req: Request, res: Response) => issueCsrfToken(req, res, ctx.csrfKey, secure);
  const send = (res: Response, status: number, html: string): void => void res.status(status).type('html').send(html);
  const actorOf = (req: Request, user: User): Actor => ({ userId: user.id, clientId: null, via: 'account', ip: req.ip, requestId: req.id });
  const attempt = (req: Request) => ({ ip: req.ip ?? 'unknown', clientId: NO_CLIENT, requestId: req.id, deviceCookie: readCookie(req, DEVICE_COOKIE) });
  const changeOf = (req: Request, s: SignedIn) => ({ ip: req.ip, requestId: req.id, keep: s.session.id });
  const pending = pendingSignIns(ctx.csrfKey, secure, ctx.sessions);
  const expired = (req: Request, res: Response) => login(req, res, 403, 'The sign-in form expired. Please sign in again.');

  const login = (req: Request, res: Response, status = 200, error?: string, username?: string) => {
    const csrfToken = csrf(req, res);
    const passkey = ctx.mfa.passkeys.enabled
      ? passkeyForm({ action: '/account', fields: {}, csrfToken }, { purpose: 'login', action: 'passkey', label: 'Sign in with a passkey', options: '/passkey/options', secondary: true }) + passkeyScriptTag
      : '';
    send(res, status, loginPage({ action: '/account', request: {}, csrfToken, clientName: 'your account', error, username, extra: passkey }));
  };

  async function show(req: Request, res: Response, s: SignedIn, o: { status?: number; notice?: string; error?: string } = {}): Promise<void> {
    send(
      res,
      o.status ?? 200,
      accountPage({
        username: s.user.username,
        ownPassword: s.user.backend === ctx.users.localBackend,
        mfa: await ctx.mfa.status(s.user.id),
        passkeysEnabled: ctx.mfa.passkeys.enabled,
        passkeys: (await ctx.mfa.passkeys.list(s.user.id)).map((k) => ({ id: k.credentialId, name: k.name, createdAt: k.createdAt })),
        mayAddFactor: provedRecently(s.session),
        csrfToken: csrf(req, res),
        notice: o.notice,
        error: o.error,
      }),
    );
  }

  async function startSession(res: Response, user: User, amr: Parameters<AppContext['sessions']['create']>[1], deviceCookie: string): Promise<void> {
    const { cookie } = await ctx.sessions.create(user.id, amr);
    res.cookie(SSO_COOKIE, cookie, cookieOptions(secure));
    res.cookie(DEVICE_COOKIE, deviceCookie, deviceCookieOptions(secure));
    res.redirect(303, '/account');
  }

  /**
   * The password, or a current code, asked again before a change; an error message when neither is
   * right. A right one is a proof: the session may add a factor for the next five minutes.
   */
  async function confirmIdentity(req: Request, s: SignedIn, form: Record<string, string>): Promise<string | undefined> {
    const refused = await checkProof(req, s.user, form);
    if (refused) return refused;
    await ctx.sessions.proved(s.session.id);
    s.session.provedAt = clock.now(); // this request's view too: the page it answers with may offer to add one
    return undefined;
  }

  async function checkProof(req: Request, user: User, form: Record<string, string>): Promise<string | undefined> {
    if (form.code) {
      const outcome = await ctx.signIn.secondStep({ user, code: form.code, amr: [], ...attempt(req) });
      if (outcome.ok) return undefined;
      return outcome.reason === 'throttled' ? `too many failed attempts, retry after ${outcome.retryAfter} s` : 'That code is not right.';
    }
    if (form.password) {
      const outcome = await ctx.signIn.signIn({ username: user.username, password: form.password, ...attempt(req) });
      // A right password of a user with a factor answers "second factor": the password was right all the same.
      if ((outcome.ok || outcome.reason === 'second_factor') && outcome.user.id === user.id) return undefined;
      return !outcome.ok && outcome.reason === 'throttled' ? `too many failed attempts, retry after ${outcome.retryAfter} s` : 'That password is not right.';
    }
    return 'Enter your password or a code to confirm.';
  }

  /** The POSTs of a signed-in user, by `_action`. */
  async function change(req: Request, res: Response, s: SignedIn, form: Record<string, string>): Promise<void> {
    const { user } = s;
    switch (form._action) {
      case 'prove': {
        const refused = await confirmIdentity(req, s, form);
        if (refused) return show(req, res, s, { status: 401, error: refused });
        return show(req, res, s, { notice: 'Confirmed. For the next five minutes you can add a passkey or an authenticator app.' });
      }
      case 'remove_totp': {
        const refused = await confirmIdentity(req, s, form);
        if (refused) return show(req, res, s, { status: 401, error: refused });
        await ctx.mfa.removeTotp(user.id, changeOf(req, s));
        return show(req, res, s, { notice: 'The authenticator app is off, and its recovery codes no longer work.' });
      }
      case 'add_passkey': {
        if (!provedRecently(s.session)) return show(req, res, s, { status: 401, error: 'Confirm it is you first (your password, or a code), then add the passkey.' });
        const refused = await ctx.mfa.addPasskey(user, form.webauthn_state, form.webauthn_response, form.name ?? '', changeOf(req, s));
        if (refused) return show(req, res, s, { status: 400, error: refused });
        const codes = await ctx.mfa.codesForFirstFactor(user.id);
        if (codes) return send(res, 200, recoveryCodesPage({ action: '/account', fields: {}, csrfToken: csrf(req, res), codes, nextLabel: 'Back to your account' }));
        return show(req, res, s, { notice: 'The passkey is added.' });
      }
      case 'remove_passkey': {
        const refused = await confirmIdentity(req, s, form);
        if (refused) return show(req, res, s, { status: 401, error: refused });
        await ctx.mfa.removePasskey(user.id, form.credential_id ?? '', changeOf(req, s));
        return show(req, res, s, { notice: 'The passkey is removed.' });
      }
      case 'recovery_codes': {
        const refused = await confirmIdentity(req, s, form);
        if (refused) return show(req, res, s, { status: 401, error: refused });
        const codes = await ctx.mfa.newRecoveryCodes(user.id, { ip: req.ip, requestId: req.id });
        return send(res, 200, recoveryCodesPage({ action: '/account', fields: {}, csrfToken: csrf(req, res), codes, nextLabel: 'Back to your account' }));
      }
      case 'password': {
        const refused = await confirmIdentity(req, s, { password: form.password ?? '' });
        if (refused) return show(req, res, s, { status: 401, error: refused });
        try {
          await ctx.users.setPassword(user.id, form.new_password ?? '', actorOf(req, user), s.session.id);
        } catch (err) {
          if (err instanceof InputError) return show(req, res, s, { status: 400, error: `New password: ${err.message}` });
          throw err;
        }
        return show(req, res, s, { notice: 'Your password is changed. Applications signed in with the old one must sign in again.' });
      }
      case 'sign_out_everywhere': {
        const ended = await ctx.sessions.endAllOf(user.id, { reason: 'signed_out_everywhere', actor: actorOf(req, user) });
        await ctx.audit.record({ kind: 'token.revoked', userId: user.id, ip: req.ip, requestId: req.id, details: { count: ended.tokens } });
        await ctx.audit.record({ kind: 'account.signed_out_everywhere', userId: user.id, ip: req.ip, requestId: req.id, details: { sessions: ended.sessions } });
        res.clearCookie(SSO_COOKIE, cookieOptions(secure));
        return send(res, 200, signedOutPage());
      }
      default:
        res.redirect(303, '/account');
    }
  }

  const account: RequestHandler = async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const s = await currentSession(ctx, req);
      if (req.method !== 'POST') return s ? await show(req, res, s) : login(req, res);
      const form = (req.body ?? {}) as Record<string, string>;
      if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) {
        return s ? await show(req, res, s, { status: 403, error: 'The form expired. Please try again.' }) : login(req, res, 403, 'The form expired. Please try again.');
      }
      if (form._action === 'login') {
        const outcome = await authenticate(req, res, NO_CLIENT);
        if (outcome.ok) return await startSession(res, outcome.user, outcome.amr, outcome.deviceCookie);
        if (outcome.reason === 'second_factor') {
          const started = await pending.begin(req, res, { userId: outcome.user.id, amr: ['pwd'], clientId: NO_CLIENT });
          const passkey = await ctx.mfa.offersPasskey(outcome.user.id);
          return send(res, 200, secondStepPage({ action: '/account', fields: { pending: started }, csrfToken: csrf(req, res), username: outcome.user.username, passkey }));
        }
        if (outcome.reason === 'throttled') res.setHeader('Retry-After', String(outcome.retryAfter));
        const message =
          outcome.reason === 'throttled'
            ? `too many failed attempts, retry after ${outcome.retryAfter} s`
            : outcome.reason === 'unavailable'
              ? 'The directory is unreachable right now. Please try again shortly.'
              : 'Invalid username or password.';
        return login(req, res, outcome.reason === 'throttled' ? 429 : outcome.reason === 'unavailable' ? 503 : 401, message, (form.username ?? '').trim());
      }
      if (form._action === 'mfa') {
        // Another browser's, used already, or expired: the sign-in starts again (SPEC 7).
        const taken = await pending.take(req, form.pending, NO_CLIENT);
        const user = taken && (await ctx.users.find(taken.userId));
        if (!taken || !user || user.disabled) return expired(req, res);
        const outcome = await ctx.signIn.secondStep({ user, code: form.code ?? '', amr: taken.amr, ...attempt(req) });
        if (outcome.ok) return await startSession(res, user, outcome.amr, outcome.deviceCookie);
        if (outcome.reason === 'throttled') res.setHeader('Retry-After', String(outcome.retryAfter));
        const error = outcome.reason === 'throttled' ? `too many failed attempts, retry after ${outcome.retryAfter} s` : 'That code is not right. Try the current one, or a recovery code.';
        const next = await taken.again(res);
        return send(res, outcome.reason === 'throttled' ? 429 : 401, secondStepPage({ action: '/account', fields: { pending: next }, csrfToken: csrf(req, res), username: user.username, error }));
      }
      if (form._action === 'passkey') {
        const taken = form.pending ? await pending.take(req, form.pending, NO_CLIENT) : undefined;
        if (form.pending && !taken) return expired(req, res);
        const known = taken ? await ctx.users.find(taken.userId) : s?.user;
        const outcome = await ctx.signIn.passkeyStep({ state: form.webauthn_state, response: form.webauthn_response, user: known, amr: taken?.amr ?? s?.session.amr ?? [], ...attempt(req) });
        if (outcome.ok) return await startSession(res, outcome.user, outcome.amr, outcome.deviceCookie);
        if (outcome.reason === 'throttled') res.setHeader('Retry-After', String(outcome.retryAfter));
        if (outcome.reason === 'unavailable') return login(req, res, 503, 'The directory is unreachable right now. Please try again shortly.');
        return login(req, res, outcome.reason === 'throttled' ? 429 : 401, outcome.reason === 'throttled' ? `too many failed attempts, retry after ${outcome.retryAfter} s` : 'The passkey was not accepted.');
      }
      if (!s) return login(req, res);
      await change(req, res, s, form);
    } catch (err) {
      sendPageError(ctx, req, res, err);
    }
  };

  const totp: RequestHandler = async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      const s = await currentSession(ctx, req);
      if (!s) return res.redirect(303, '/account');
      if ((await ctx.mfa.status(s.user.id)).totp) return res.redirect(303, '/account');
      const form = (req.body ?? {}) as Record<string, string>;
      let error: string | undefined;
      let status = 200;
      let proved = provedRecently(s.session);
      if (req.method === 'POST') {
        if (!checkCsrfToken(req, ctx.csrfKey, form.csrf_token)) {
          [status, error] = [403, 'The form expired. Please try again.'];
        } else if (form._action === 'prove') {
          const refused = await confirmIdentity(req, s, form);
          if (refused) [status, error] = [401, refused];
          else proved = true;
        } else if (!proved) {
          [status, error] = [401, 'Confirm it is you first.'];
        } else {
          const codes = await ctx.mfa.confirmTotp(s.user, form.code ?? '', changeOf(req, s));
          if (codes) return send(res, 200, recoveryCodesPage({ action: '/account', fields: {}, csrfToken: csrf(req, res), codes, nextLabel: 'Back to your account' }));
          [status, error] = [400, 'That code is not right: check the time on your phone and try the current one.'];
        }
      }
      // SPEC 7: no secret is made or shown for a session that has not proved a factor for five minutes.
      if (!proved) {
        const withCode = await ctx.mfa.hasFactor(s.user.id);
        return send(res, status, proofPage({ action: '/account/mfa/totp', csrfToken: csrf(req, res), purpose: 'set up an authenticator app', withCode, error }));
      }
      const enrolment = (await ctx.mfa.pendingTotp(s.user)) ?? (await ctx.mfa.startTotp(s.user));
      if (!enrolment) return res.redirect(303, '/account');
      send(res, status, enrolTotpPage({ action: '/account/mfa/totp', fields: {}, csrfToken: csrf(req, res), secret: enrolment.secret, qrSvg: await qrSvg(enrolment.uri), error }));
    } catch (err) {
      sendPageError(ctx, req, res, err);
    }
  };

  return { account, totp };
}
