import { escapeHtml, layout } from './layout.ts';

export interface AppsView {
  username: string;
  /** By name; each link starts a sign-in at the application (docs/access-and-claims.md "My applications"). */
  apps: Array<{ name: string; launchUrl: string }>;
}

/** `/apps`: the applications the signed-in user may use, one big link each, or the words for none. */
export function appsPage(v: AppsView): string {
  const list = v.apps.length
    ? `<ul class="apps" aria-labelledby="h-apps">${v.apps
        .map((a) => `<li><a href="${escapeHtml(a.launchUrl)}">${escapeHtml(a.name)}</a></li>`)
        .join('')}</ul>`
    : `<p id="apps-empty">No applications to show. The applications your administrators open to you, and that can be started from here, appear on this page; ask them if one you need is missing.</p>`;
  return layout(
    'My applications',
    `<h1 id="h-apps">My applications</h1><p class="sub">Signed in as <strong>${escapeHtml(v.username)}</strong></p>
${list}
<p><a href="/account">Your account</a></p>`,
  );
}
