import type { Request } from 'express';
import type { Actor } from '../../audit/record.ts';
import type { AppContext } from '../../context.ts';
import { provedRecently } from '../../login/sessions.ts';
import { InputError } from '../../errors/service.ts';
import type { SignedIn } from '../current-session.ts';
import { directoryChangeAnswer } from '../directory-password.ts';
import { attemptOf } from '../attempt.ts';
import { refusalOf, type Refusal } from '../refusals.ts';
import { identityProof, NO_CLIENT } from './proof.ts';
import type { AccountAnswer } from './view.ts';
import { originOf } from '../../http/origin.ts';

/** A form posted by a signed-in user at `/account`. */
export interface AccountForm {
  req: Request;
  signedIn: SignedIn;
  form: Record<string, string>;
}

export type AccountAction = (posted: AccountForm) => Promise<AccountAnswer>;

const actorOf = ({ req, signedIn }: AccountForm): Actor => ({
  userId: signedIn.user.id,
  clientId: null,
  via: 'account',
  ip: req.ip,
  requestId: req.id,
});
/** A change of the factors ends the user's other sessions (docs/decisions.md); the one that made it stays. */
const changeOf = ({ req, signedIn }: AccountForm) => ({ ip: req.ip, requestId: req.id, keep: signedIn.session.id });

/**
 * The account page's actions, one each, by the form's `_action`. Removing a factor, new recovery codes
 * and a new password ask for the password or a current code again (docs/multi-factor-sign-in.md); adding a passkey needs
 * such a proof within five minutes.
 */
export function accountActions(ctx: AppContext): Map<string, AccountAction> {
  const confirm = identityProof(ctx);
  /** Asked again first; `fields`: what may prove it (the password change takes the password only). */
  const confirmed =
    (then: AccountAction, fields = (form: Record<string, string>) => form): AccountAction =>
    async (posted) => {
      const refused = await confirm(posted.req, posted.signedIn, fields(posted.form));
      return refused ? { show: 'account', status: 401, error: refused } : then(posted);
    };

  const prove: AccountAction = async () => ({
    show: 'account',
    notice: 'Confirmed. For the next five minutes you can add a passkey or an authenticator app.',
  });

  const removeTotp: AccountAction = async (posted) => {
    await ctx.mfa.removeTotp(posted.signedIn.user.id, changeOf(posted));
    return { show: 'account', notice: 'The authenticator app is off, and its recovery codes no longer work.' };
  };

  const addPasskey: AccountAction = async (posted) => {
    const { signedIn, form } = posted;
    if (!provedRecently(signedIn.session))
      return { show: 'account', status: 401, error: 'Confirm it is you first (your password, or a code), then add the passkey.' };
    const refused = await ctx.mfa.addPasskey(
      signedIn.user,
      { state: form.webauthn_state, response: form.webauthn_response, name: form.name ?? '' },
      changeOf(posted),
    );
    if (refused) return { show: 'account', status: 400, error: refused };
    const codes = await ctx.mfa.codesForFirstFactor(signedIn.user.id);
    return codes ? { show: 'recovery_codes', codes } : { show: 'account', notice: 'The passkey is added.' };
  };

  const removePasskey: AccountAction = async (posted) => {
    await ctx.mfa.removePasskey(posted.signedIn.user.id, posted.form.credential_id ?? '', changeOf(posted));
    return { show: 'account', notice: 'The passkey is removed.' };
  };

  const recoveryCodes: AccountAction = async ({ req, signedIn }) => ({
    show: 'recovery_codes',
    codes: await ctx.mfa.newRecoveryCodes(signedIn.user.id, originOf(req)),
  });

  const changePassword: AccountAction = async (posted) => {
    try {
      await ctx.users.setPassword(posted.signedIn.user.id, posted.form.new_password ?? '', actorOf(posted), posted.signedIn.session.id);
    } catch (err) {
      if (err instanceof InputError) return { show: 'account', status: 400, error: `New password: ${err.message}` };
      throw err;
    }
    return { show: 'account', notice: 'Your password is changed. Applications signed in with the old one must sign in again.' };
  };

  /**
   * docs/identity-backends.md: a directory user's new password, written bound as them with the current one (which is
   * the proof); the directory's refusal in words, nothing changed; the other sessions end with it (the users service).
   */
  const changeDirectoryPassword: AccountAction = async (posted) => {
    const { req, signedIn, form } = posted;
    const newPassword = form.new_password ?? '';
    if (!form.password || !newPassword) return { show: 'account', status: 400, error: 'Type your current password and a new one.' };
    if (newPassword !== form.new_password_again)
      return { show: 'account', status: 400, error: 'The two new passwords are not the same. Your password is unchanged.' };
    // The current password is checked as a sign-in first: counted and throttled by the brute-force
    // policy (docs/decisions.md), which the directory's bind alone would not be.
    const refused = await currentPasswordRefused(req, signedIn, form.password);
    if (refused) return { show: 'account', status: refused.status, error: refused.message };
    const change = { oldPassword: form.password, newPassword, via: 'account' as const, keep: signedIn.session.id };
    const changed = directoryChangeAnswer(await ctx.users.changeDirectoryPassword(signedIn.user, change, originOf(req)));
    if (!changed.ok) return { show: 'account', status: changed.status, error: changed.message };
    return {
      show: 'account',
      notice: 'Your password is changed in the directory. Applications signed in with the old one must sign in again.',
    };
  };

  /** The current password of a directory user, checked as a counted sign-in; a right one the directory says must change is right too. */
  async function currentPasswordRefused(req: Request, signedIn: SignedIn, password: string): Promise<Refusal | undefined> {
    const outcome = await ctx.signIn.signIn({ username: signedIn.user.username, password, ...attemptOf(req, NO_CLIENT) });
    const right =
      outcome.ok ||
      outcome.reason === 'second_factor' ||
      ((outcome.reason === 'password_expired' || outcome.reason === 'password_must_change') && 'user' in outcome && !!outcome.user);
    if (right && (!('user' in outcome) || outcome.user?.id === signedIn.user.id)) return undefined;
    if (outcome.ok || outcome.reason === 'invalid_credentials')
      return { status: 401, message: 'The current password is not right. Your password is unchanged.' };
    // As when the write itself finds the directory down: audited and answered alike.
    if (outcome.reason === 'unavailable') {
      const failed = directoryChangeAnswer(await ctx.users.directoryPasswordUnreachable(signedIn.user, 'account', originOf(req)));
      return failed.ok ? undefined : { status: failed.status, message: failed.message };
    }
    const refusal = refusalOf(outcome, 'proofPassword');
    return { ...refusal, message: `${refusal.message} Your password is unchanged.` };
  }

  const ownPassword = confirmed(changePassword, (form) => ({ password: form.password ?? '' }));
  const password: AccountAction = (posted) =>
    posted.signedIn.user.backend !== ctx.users.localBackend && ctx.identity.canWritePassword(posted.signedIn.user, 'change')
      ? changeDirectoryPassword(posted)
      : ownPassword(posted);

  const signOutEverywhere: AccountAction = async (posted) => {
    const { req, signedIn } = posted;
    await ctx.sessions.endAllOf(signedIn.user.id, { actor: actorOf(posted), reason: 'signed_out_everywhere', origin: originOf(req) });
    return { show: 'signed_out' };
  };

  return new Map<string, AccountAction>([
    ['prove', confirmed(prove)],
    ['remove_totp', confirmed(removeTotp)],
    ['add_passkey', addPasskey],
    ['remove_passkey', confirmed(removePasskey)],
    ['recovery_codes', confirmed(recoveryCodes)],
    ['password', password],
    ['sign_out_everywhere', signOutEverywhere],
  ]);
}
