import type { Request, Response } from 'express';
import type { AppContext } from '../../context.ts';
import { provedRecently } from '../../login/sessions.ts';
import { cookieOptions, secureCookies, SSO_COOKIE } from '../cookies.ts';
import { issueCsrfToken } from '../csrf.ts';
import type { SignedIn } from '../current-session.ts';
import { accountPage } from '../pages/account.ts';
import { signedOutPage } from '../pages/logout.ts';
import { showStep, type Place } from '../sign-in/show.ts';
import type { PageStep } from '../sign-in/step.ts';

/** What an account form answers with; the route shows it (an action never writes the response). */
export type AccountAnswer =
  | { show: 'account'; status?: number; notice?: string; error?: string }
  | { show: 'recovery_codes'; codes: string[] }
  | { show: 'signed_out' };

/** The account page's sign-in posts back to it and belongs to no client application. */
export const accountPlace: Place = { action: '/account', fields: {}, clientName: 'your account', continueLabel: 'Back to your account' };

/** The account page's answers as pages: its own page, the recovery codes, the signed-out page, a sign-in step. */
export function accountViews(ctx: AppContext) {
  const secure = secureCookies(ctx.config);

  async function accountView(
    req: Request,
    res: Response,
    s: SignedIn,
    o: { status?: number; notice?: string; error?: string },
  ): Promise<void> {
    const html = accountPage({
      username: s.user.username,
      // A SCIM user's password is a hash here too; one without any (an upstream's only) has none to change.
      ownPassword: ctx.users.keepsPassword(s.user) && !!s.user.passwordHash,
      directoryPassword: s.user.backend !== ctx.users.localBackend && ctx.identity.canWritePassword(s.user, 'change'),
      mfa: await ctx.mfa.status(s.user.id),
      passkeysEnabled: ctx.mfa.passkeys.enabled,
      passkeys: (await ctx.mfa.passkeys.list(s.user.id)).map((k) => ({ id: k.credentialId, name: k.name, createdAt: k.createdAt })),
      mayAddFactor: provedRecently(s.session),
      csrfToken: issueCsrfToken(req, res, ctx.csrfKey, secure),
      notice: o.notice,
      error: o.error,
    });
    res
      .status(o.status ?? 200)
      .type('html')
      .send(html);
  }

  return {
    /** A sign-in step at the account page (the login form, the second step). */
    signIn: (req: Request, res: Response, step: PageStep): Promise<void> => showStep(ctx, req, res, step, accountPlace),

    async show(req: Request, res: Response, s: SignedIn, answer: AccountAnswer): Promise<void> {
      if (answer.show === 'account') return accountView(req, res, s, answer);
      if (answer.show === 'recovery_codes') return showStep(ctx, req, res, answer, accountPlace);
      res.clearCookie(SSO_COOKIE, cookieOptions(secure));
      res.status(200).type('html').send(signedOutPage());
    },
  };
}
