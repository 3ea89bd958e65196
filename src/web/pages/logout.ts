import { escapeHtml, hidden, layout } from './layout.ts';

/** RP-initiated logout without a (matching) id_token_hint: the user confirms, so a link cannot sign anyone out. */
export function logoutConfirmPage(p: { action: string; fields: Record<string, string>; csrfToken: string; username: string }): string {
  return layout(
    'Sign out',
    `<h1>Sign out?</h1><p class="sub">You are signed in as <strong>${escapeHtml(p.username)}</strong>. Signing out ends your
single sign-on session for every application.</p>
<form method="post" action="${escapeHtml(p.action)}">
${hidden({ ...p.fields, _action: 'logout', csrf_token: p.csrfToken })}
<button type="submit">Sign out</button>
</form>
<p class="sub">To stay signed in, close this page.</p>`,
  );
}

export function signedOutPage(): string {
  return layout('Signed out', `<h1>You are signed out</h1><p class="sub">You can close this window.</p>`);
}
