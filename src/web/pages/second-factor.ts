import { errorBox, escapeHtml, hidden, layout } from './layout.ts';

/** A form's target and the fields it carries (the authorize request's parameters, or none). */
export interface FormTarget {
  action: string;
  fields: Record<string, string>;
  csrfToken: string;
}

const form = (t: FormTarget, action: string, body: string) =>
  `<form method="post" action="${escapeHtml(t.action)}">${hidden({ ...t.fields, _action: action, csrf_token: t.csrfToken })}${body}</form>`;

const codeInput = `<label for="code">Code</label>
<input id="code" name="code" type="text" inputmode="text" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" required autofocus>`;

/**
 * A passkey button: a form the page's script (`/assets/passkey.js`) fills with the authenticator's
 * answer and posts. Hidden until the script finds WebAuthn in the browser.
 */
export function passkeyForm(
  t: FormTarget,
  o: { purpose: 'login' | 'register' | 'reset'; action: string; label: string; options: string; nameField?: boolean; secondary?: boolean },
): string {
  const name = o.nameField
    ? `<label for="passkey-name">Name of this passkey</label><input id="passkey-name" name="name" type="text" maxlength="100" value="Passkey">`
    : '';
  return `<form method="post" action="${escapeHtml(t.action)}" data-passkey data-purpose="${o.purpose}" data-options="${escapeHtml(o.options)}" hidden>
${hidden({ ...t.fields, _action: o.action, csrf_token: t.csrfToken, webauthn_state: '', webauthn_response: '' })}${name}
<button type="submit"${o.secondary ? ' class="secondary"' : ''}>${escapeHtml(o.label)}</button><p class="sub" role="status"></p></form>`;
}

export const passkeyScriptTag = '<script src="/assets/passkey.js" defer></script>';

/** The second step of a sign-in: a code from the authenticator app or a recovery code, or a passkey. */
export function secondStepPage(t: FormTarget & { username: string; error?: string; passkey?: boolean }): string {
  const passkey = t.passkey
    ? passkeyForm(t, { purpose: 'login', action: 'passkey', label: 'Use a passkey', options: '/passkey/options', secondary: true }) +
      passkeyScriptTag
    : '';
  return layout(
    'Second step',
    `<h1>Confirm it is you</h1><p class="sub">Signing in as <strong>${escapeHtml(t.username)}</strong>. Enter the six-digit code
from your authenticator app, or one of your recovery codes.</p>${errorBox(t.error)}
${form(t, 'mfa', `${codeInput}<button type="submit">Continue</button>`)}${passkey}`,
  );
}

/**
 * TOTP enrolment: the secret as text (`#totp-secret`), as a QR code drawn here (an inline SVG, no
 * external service), and the first code to confirm it.
 */
export function enrolTotpPage(t: FormTarget & { secret: string; qrSvg: string; required?: boolean; error?: string }): string {
  const why = t.required ? `<p class="sub">This sign-in needs a second factor. Set up an authenticator app to continue.</p>` : '';
  return layout(
    'Set up an authenticator app',
    `<h1>Set up an authenticator app</h1>${why}
<p>Scan this code with an authenticator app (any TOTP app), or type the key below into it.</p>
<div class="qr" role="img" aria-label="QR code of the key">${t.qrSvg}</div>
<p>Key: <code id="totp-secret" class="secret">${escapeHtml(t.secret)}</code></p>${errorBox(t.error)}
${form(t, 'enrol', `${codeInput.replace('Code', 'The six-digit code the app shows')}<button type="submit">Turn on</button>`)}`,
  );
}

/** The recovery codes, shown once; `next` is the form that goes on (the original request, or the account page). */
export function recoveryCodesPage(t: FormTarget & { codes: string[]; nextLabel: string }): string {
  const items = t.codes.map((c) => `<li><code>${escapeHtml(c)}</code></li>`).join('');
  if (t.codes.length === 0) {
    return layout(
      'Second factor added',
      `<h1>Second factor added</h1><p class="sub">Your recovery codes from before still work.</p>
${form(t, 'continue', `<button type="submit">${escapeHtml(t.nextLabel)}</button>`)}`,
    );
  }
  return layout(
    'Recovery codes',
    `<h1>Save your recovery codes</h1>
<p class="sub">Each code signs you in once if you lose your authenticator. They are shown only now: keep them somewhere safe.</p>
<div id="recovery-codes"><ul class="codes">${items}</ul></div>
${form(t, 'continue', `<button type="submit">${escapeHtml(t.nextLabel)}</button>`)}`,
  );
}
