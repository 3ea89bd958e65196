import { errorBox, escapeHtml, hidden, layout } from './layout.ts';
import type { FormPage } from './login.ts';

/** docs/identity-backends.md: the directory asks for a new password after a right one; asked twice, never the old one again. */
export function changePasswordPage(p: FormPage & { username: string; pending: string; notice: string }): string {
  return layout(
    'Choose a new password',
    `<h1>Choose a new password</h1><p class="sub">for <strong>${escapeHtml(p.username)}</strong>, to continue to <strong>${escapeHtml(p.clientName)}</strong></p>
<p class="notice" role="status">${escapeHtml(p.notice)}</p>${errorBox(p.error)}
<form method="post" action="${escapeHtml(p.action)}">
${hidden({ ...p.request, _action: 'change_password', csrf_token: p.csrfToken, pending: p.pending })}
<label for="new-password">New password</label>
<input id="new-password" name="new_password" type="password" autocomplete="new-password" required autofocus>
<label for="new-password-again">New password again</label>
<input id="new-password-again" name="new_password_again" type="password" autocomplete="new-password" required>
<button type="submit">Change password and continue</button>
</form>`,
  );
}

/** docs/identity-backends.md: the password expires soon; told once, after signing in. */
export function passwordExpiringPage(p: Omit<FormPage, 'error'> & { expiresAt: number; mayChange: boolean }): string {
  const days = Math.max(0, Math.ceil((p.expiresAt - Date.now()) / 86_400_000));
  const when = new Date(p.expiresAt).toISOString().slice(0, 10);
  return layout(
    'Your password expires soon',
    `<h1>Your password expires soon</h1>
<p role="status">Your password expires on ${when} (in ${days} day${days === 1 ? '' : 's'}). ${p.mayChange ? 'Change it now, or continue and change it later.' : 'Ask your administrator how to change it.'}</p>
${p.mayChange ? '<p><a href="/account#h-password">Change it now</a></p>' : ''}
<form method="post" action="${escapeHtml(p.action)}">
${hidden({ ...p.request, _action: 'continue', csrf_token: p.csrfToken })}
<button type="submit">Continue to ${escapeHtml(p.clientName)}</button>
</form>`,
  );
}
