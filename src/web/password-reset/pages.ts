import { errorBox, escapeHtml, hidden, layout } from '../pages/layout.ts';
import { passkeyForm, passkeyScriptTag } from '../pages/second-factor.ts';

export const FORGOT_PATH = '/password/forgot';
export const RESET_PATH = '/password/reset';

/** The "Forgot your password?" form: a username or an email. */
export function forgotPage(p: { csrfToken: string; error?: string }): string {
  return layout(
    'Forgot your password?',
    `<h1>Forgot your password?</h1><p class="sub">Give your username or email address. We will send a link to choose a new password to the address we have for the account.</p>
${errorBox(p.error)}
<form method="post" action="${FORGOT_PATH}">
${hidden({ csrf_token: p.csrfToken })}
<label for="identifier">Username or email</label>
<input id="identifier" name="identifier" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus>
<button type="submit">Send me a link</button>
</form>`,
  );
}

/** The one answer to every request, whether or not the account exists (docs/password-reset-by-mail.md). */
export function sentPage(): string {
  return layout(
    'Check your mail',
    `<h1>Check your mail</h1>
<p id="reset-sent">If an account exists for what you typed, a mail with a link to choose a new password is on its way to the address we have for it. The link works once, for 15 minutes.</p>
<p class="sub">No mail? Check the spam folder, or <a href="${FORGOT_PATH}">ask again</a> in a few minutes.</p>`,
  );
}

/**
 * The new password, twice, and the second factor first when the user has one: a code, or (`passkey`)
 * the user's passkey, whose button comes first and posts on its own (`_action=passkey`); once it
 * passed, the form carries its `proof` instead of asking for a code.
 */
export function resetPage(p: {
  token: string;
  csrfToken: string;
  username: string;
  needsCode: boolean;
  passkey?: boolean;
  proof?: string;
  error?: string;
}): string {
  const code = p.needsCode
    ? `<label for="code">Code from your authenticator app, or a recovery code</label>
<input id="code" name="code" type="text" inputmode="text" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" required>`
    : '';
  const passkey =
    p.needsCode && p.passkey
      ? passkeyForm(
          { action: RESET_PATH, fields: { token: p.token }, csrfToken: p.csrfToken },
          { purpose: 'reset', action: 'passkey', label: 'Confirm with a passkey', options: '/passkey/options', secondary: true },
        ) + passkeyScriptTag
      : '';
  const passed = p.proof ? `<p id="reset-passkey-passed">Your passkey was accepted. Now choose the new password.</p>` : '';
  return layout(
    'Choose a new password',
    `<h1>Choose a new password</h1><p class="sub">for <strong id="reset-username">${escapeHtml(p.username)}</strong></p>
${errorBox(p.error)}${passed}${passkey}
<form method="post" action="${RESET_PATH}">
${hidden({ token: p.token, csrf_token: p.csrfToken, _action: 'reset', ...(p.proof ? { factor_proof: p.proof } : {}) })}
${code}
<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" required>
<label for="confirm">New password again</label>
<input id="confirm" name="confirm" type="password" autocomplete="new-password" required>
<button type="submit">Set the new password</button>
</form>`,
  );
}

export function donePage(): string {
  return layout(
    'Password changed',
    `<h1>Password changed</h1>
<p id="reset-done">Your new password is set. You were signed out everywhere: sign in again with the new password.</p>
<p><a href="/account">Go to your account</a></p>`,
  );
}

/** A link used twice, expired, cut short or made up (400), or a directory out of reach (503). */
/** `askAgain`: "Forgot your password?" is on, so a new link can be asked for (an invitation alone cannot). */
export function linkProblemPage(problem: 'invalid' | 'unavailable', askAgain = true): string {
  const text =
    problem === 'invalid'
      ? `This link cannot be used: it was used already, it has expired (reset links work for 15 minutes, invitations for 7 days), or it is not complete.${askAgain ? ' Ask for a new one.' : ' Ask your administrator for a new one.'}`
      : 'The directory that holds your password cannot be reached right now, so nothing was changed. Your link still works: try again in a moment.';
  return layout(
    problem === 'invalid' ? 'Link not valid' : 'Try again shortly',
    `<h1>${problem === 'invalid' ? 'This reset link is not valid' : 'Try again shortly'}</h1>
<p class="error" role="alert" id="reset-problem">${escapeHtml(text)}</p>
${askAgain ? `<p><a href="${FORGOT_PATH}">Ask for a new link</a></p>` : ''}`,
  );
}
