import { errorBox, escapeHtml, hidden, layout } from './layout.ts';
import { passkeyForm, passkeyScriptTag } from './second-factor.ts';
import type { MfaStatus } from '../../mfa/service.ts';

export interface AccountView {
  username: string;
  /** Whether the password can be changed here (database users). */
  ownPassword: boolean;
  /** Whether the password can be changed in the user's directory (docs/identity-backends.md: the backend's `passwordChange`). */
  directoryPassword?: boolean;
  mfa: MfaStatus;
  /** False with PUBLIC_URL at an IP address: browsers refuse one as the relying party. */
  passkeysEnabled: boolean;
  passkeys: Array<{ id: string; name: string; createdAt: number }>;
  /** The session proved a factor within five minutes: a passkey may be added without asking again. */
  mayAddFactor: boolean;
  csrfToken: string;
  notice?: string;
  error?: string;
}

const form = (csrfToken: string, action: string, body: string, label: string, secondary = false) =>
  `<form method="post" action="/account">${hidden({ _action: action, csrf_token: csrfToken })}${body}<button type="submit"${secondary ? ' class="secondary"' : ''}>${escapeHtml(label)}</button></form>`;

/** Asked again before a factor goes or the password changes (docs/multi-factor-sign-in.md): the password, or a current code. */
const confirmFields = (id: string) => `<label for="${id}-password">Your password</label>
<input id="${id}-password" name="password" type="password" autocomplete="current-password">
<label for="${id}-code">or a code from your authenticator app</label>
<input id="${id}-code" name="code" type="text" autocomplete="one-time-code" autocapitalize="none" spellcheck="false">`;

/** `/account`: the signed-in user's factors, password and sessions. */
export function accountPage(v: AccountView): string {
  const notice = v.notice ? `<p class="sub" role="status">${escapeHtml(v.notice)}</p>` : '';
  const totp = v.mfa.totp
    ? `<p>On. Codes come from your authenticator app.</p>${form(v.csrfToken, 'remove_totp', confirmFields('remove'), 'Turn off the authenticator app', true)}`
    : `<p>Off. An authenticator app adds a second step to your sign-in.</p><p><a href="/account/mfa/totp">Set up an authenticator app</a></p>`;
  const anyFactor = v.mfa.totp || v.mfa.passkeys > 0;
  const keys = v.passkeys
    .map(
      (k, i) => `<li><strong>${escapeHtml(k.name)}</strong>, added ${new Date(k.createdAt).toISOString().slice(0, 10)}
${form(v.csrfToken, 'remove_passkey', `<input type="hidden" name="credential_id" value="${escapeHtml(k.id)}">${confirmFields(`passkey-${i}`)}`, `Remove ${k.name}`, true)}</li>`,
    )
    .join('');
  // docs/decisions.md: a session that has not proved a factor for five minutes confirms before the ceremony, not after it.
  const addPasskey = v.mayAddFactor
    ? `${passkeyForm({ action: '/account', fields: {}, csrfToken: v.csrfToken }, { purpose: 'register', action: 'add_passkey', label: 'Add a passkey', options: '/passkey/options', nameField: true })}${passkeyScriptTag}`
    : `<p>To add a passkey, confirm it is you first.</p>${form(v.csrfToken, 'prove', confirmFields('prove'), 'Confirm', true)}`;
  const passkeys = !v.passkeysEnabled
    ? `<p>Passkeys need this server's address (PUBLIC_URL) to be a host name, not an IP address: browsers refuse an IP address. Ask its administrator.</p>`
    : `${v.passkeys.length ? `<ul class="scopes">${keys}</ul>` : "<p>None yet. A passkey signs you in without a password, with your device's screen lock.</p>"}
${addPasskey}`;
  const recovery = anyFactor
    ? `<p>${v.mfa.recoveryCodesLeft} unused recovery code${v.mfa.recoveryCodesLeft === 1 ? '' : 's'} left.</p>${form(v.csrfToken, 'recovery_codes', confirmFields('recovery'), 'Make new recovery codes', true)}`
    : `<p>Made when you set up a second factor.</p>`;
  const password = v.ownPassword
    ? form(
        v.csrfToken,
        'password',
        `<label for="current-password">Current password</label><input id="current-password" name="password" type="password" autocomplete="current-password" required>
<label for="new-password">New password (8 characters or more)</label><input id="new-password" name="new_password" type="password" autocomplete="new-password" minlength="8" required>`,
        'Change password',
      )
    : v.directoryPassword
      ? form(
          v.csrfToken,
          'password',
          `<p>Your password is kept in your organisation's directory; its rules apply.</p>
<label for="current-password">Current password</label><input id="current-password" name="password" type="password" autocomplete="current-password" required>
<label for="new-password">New password</label><input id="new-password" name="new_password" type="password" autocomplete="new-password" required>
<label for="new-password-again">New password again</label><input id="new-password-again" name="new_password_again" type="password" autocomplete="new-password" required>`,
          'Change password',
        )
      : `<p>Your password is managed by your organisation's directory.</p>`;
  return layout(
    'Your account',
    `<h1>Your account</h1><p class="sub">Signed in as <strong>${escapeHtml(v.username)}</strong></p>${notice}${errorBox(v.error)}
<p><a href="/apps">My applications</a></p>
<section aria-labelledby="h-totp"><h2 id="h-totp">Authenticator app</h2>${totp}</section>
<section aria-labelledby="h-recovery"><h2 id="h-recovery">Recovery codes</h2>${recovery}</section>
<section aria-labelledby="h-passkeys"><h2 id="h-passkeys">Passkeys</h2>${passkeys}</section>
<section aria-labelledby="h-password"><h2 id="h-password">Password</h2>${password}</section>
<section aria-labelledby="h-sessions"><h2 id="h-sessions">Sessions</h2><p>Ends your sign-in on every device and application.</p>
${form(v.csrfToken, 'sign_out_everywhere', '', 'Sign out everywhere', true)}</section>`,
  );
}

/**
 * Asked before a factor is added by a session that has not proved one for five minutes (docs/decisions.md):
 * the password, or a code when the user has a factor already. Nothing of the new factor is made
 * before this is answered.
 */
export function proofPage(t: { action: string; csrfToken: string; purpose: string; withCode: boolean; error?: string }): string {
  const fields = t.withCode
    ? confirmFields('proof')
    : `<label for="proof-password">Your password</label><input id="proof-password" name="password" type="password" autocomplete="current-password" required autofocus>`;
  return layout(
    'Confirm it is you',
    `<h1>Confirm it is you</h1><p class="sub">To ${escapeHtml(t.purpose)}, enter your password${t.withCode ? ', or a code from your authenticator app or a recovery code' : ''}.</p>${errorBox(t.error)}
<form method="post" action="${escapeHtml(t.action)}">${hidden({ _action: 'prove', csrf_token: t.csrfToken })}${fields}<button type="submit">Continue</button></form>`,
  );
}
