import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { qrSvg } from '../../mfa/qr.ts';
import { secureCookies } from '../cookies.ts';
import { issueCsrfToken } from '../csrf.ts';
import { accessDeniedPage } from '../pages/access-denied.ts';
import { consentPage, loginPage, upstreamButtons, upstreamErrorPage } from '../pages/login.ts';
import { changePasswordPage, passwordExpiringPage } from '../pages/password.ts';
import { FORGOT_PATH } from '../password-reset/pages.ts';
import {
  enrolTotpPage,
  passkeyForm,
  passkeyScriptTag,
  recoveryCodesPage,
  secondStepPage,
  type FormTarget,
} from '../pages/second-factor.ts';
import type { PageStep } from './step.ts';

/** Where a sign-in's pages post back, and what they carry. */
export interface Place {
  /** The form's target: the authorize endpoint, or `/account`. */
  action: string;
  /** The authorize request's own parameters, carried unchanged; none at the account page. */
  fields: Record<string, string>;
  clientName: string;
  /** The label of the button after the recovery codes. */
  continueLabel: string;
}

/** The login page's passkey button (hidden unless the browser has WebAuthn and PUBLIC_URL allows passkeys). */
export function loginPasskeyButton(ctx: AppContext, t: FormTarget): string {
  if (!ctx.mfa.passkeys.enabled) return '';
  return (
    passkeyForm(t, { purpose: 'login', action: 'passkey', label: 'Sign in with a passkey', options: '/passkey/options', secondary: true }) +
    passkeyScriptTag
  );
}

/** The login page's other ways in: an upstream identity provider each, then a passkey. */
const otherWays = (ctx: AppContext, t: FormTarget): string => upstreamButtons(t, ctx.upstreams.list) + loginPasskeyButton(ctx, t);

async function pageOf(ctx: AppContext, step: Exclude<PageStep, { show: 'redirect' }>, place: Place, csrfToken: string): Promise<string> {
  const target: FormTarget = { action: place.action, fields: place.fields, csrfToken };
  const form = { action: place.action, request: place.fields, csrfToken, clientName: place.clientName };
  switch (step.show) {
    case 'change_password':
      return changePasswordPage({ ...form, error: step.error, username: step.username, pending: step.pending, notice: step.notice });
    case 'password_expiring':
      return passwordExpiringPage({ ...form, expiresAt: step.expiresAt, mayChange: step.mayChange });
    case 'login':
      return loginPage({
        ...form,
        error: step.error,
        username: step.username,
        extra: otherWays(ctx, target),
        forgotPassword: ctx.passwordReset.enabled ? FORGOT_PATH : undefined,
      });
    case 'second_factor': {
      const fields = step.pending ? { ...place.fields, pending: step.pending } : place.fields;
      return secondStepPage({ ...target, fields, username: step.user.username, error: step.error, passkey: step.passkey });
    }
    case 'enrol':
      return enrolTotpPage({
        ...target,
        secret: step.enrolment.secret,
        qrSvg: await qrSvg(step.enrolment.uri),
        required: true,
        error: step.error,
      });
    case 'recovery_codes':
      return recoveryCodesPage({ ...target, codes: step.codes, nextLabel: place.continueLabel });
    case 'consent':
      return consentPage({ ...form, error: step.error, scopes: step.scopes, username: step.user.username });
    case 'upstream_error':
      return upstreamErrorPage(step.upstream, step.message);
    // docs/access-and-claims.md: the application's name and whom to ask; no form, nothing sent to the application.
    case 'access_denied':
      return accessDeniedPage({ application: step.application, username: step.username, contact: ctx.config.access.contact });
  }
}

/** Shows a sign-in step's page: the one place a step becomes a response. */
export async function showStep(ctx: AppContext, req: Request, res: Response, step: PageStep, place: Place): Promise<void> {
  if (step.show === 'redirect') return void res.redirect(303, step.location);
  const html = await pageOf(ctx, step, place, issueCsrfToken(req, res, ctx.csrfKey, secureCookies(ctx.config)));
  const status = step.show === 'recovery_codes' ? 200 : step.status;
  if ('retryAfter' in step && step.retryAfter !== undefined) res.setHeader('Retry-After', String(step.retryAfter));
  // RFC 4559: a browser with a Kerberos ticket answers this with it; any other shows the form, the body.
  if (step.show === 'login' && step.negotiate) res.setHeader('WWW-Authenticate', 'Negotiate');
  res.status(status).type('html').send(html);
}
