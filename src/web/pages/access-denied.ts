import { escapeHtml, layout } from './layout.ts';

/**
 * The page of a signed-in user whom an application's access policy refuses (docs/access-and-claims.md),
 * sent with status 403: the application's name, whom to ask (the administrator, and `access.contact` when set),
 * and the way to the account page. Nothing is sent back to the application: no redirect, no form.
 */
export function accessDeniedPage(p: { application: string; contact?: string; username: string }): string {
  const contact = p.contact ? `: <span id="contact">${escapeHtml(p.contact)}</span>` : '';
  return layout(
    'No access',
    `<h1 id="no-access">You don't have access to <span id="application">${escapeHtml(p.application)}</span></h1>
<p class="sub">You are signed in as <strong>${escapeHtml(p.username)}</strong>, but this account may not use ${escapeHtml(p.application)}.</p>
<p id="ask">Ask your administrator to give you access${contact}.</p>
<p><a href="/account">Your account</a></p>`,
  );
}
