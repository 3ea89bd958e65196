import { errorBox, escapeHtml, hidden, layout } from './layout.ts';

export interface FormPage {
  action: string;
  /** The authorize request's own parameters, carried through the form unchanged. */
  request: Record<string, string>;
  csrfToken: string;
  clientName: string;
  error?: string;
}

/**
 * The login form; `extra`: more ways to sign in below it (the passkey button); `forgotPassword`: the
 * "Forgot your password?" link (docs/identity-backends.md), when resets by mail are on.
 */
export function loginPage(p: FormPage & { username?: string; extra?: string; forgotPassword?: string }): string {
  return layout(
    'Sign in',
    `<h1>Sign in</h1><p class="sub">to continue to <strong>${escapeHtml(p.clientName)}</strong></p>
${errorBox(p.error)}
<form method="post" action="${escapeHtml(p.action)}">
${hidden({ ...p.request, _action: 'login', csrf_token: p.csrfToken })}
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus value="${escapeHtml(p.username ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>${p.forgotPassword ? `<p><a id="forgot-password" href="${escapeHtml(p.forgotPassword)}">Forgot your password?</a></p>` : ''}${p.extra ?? ''}`,
  );
}

export const scopeText: Record<string, string> = {
  openid: 'Know who you are',
  profile: 'Your name and username',
  email: 'Your email address',
  groups: 'The groups you belong to',
  offline_access: 'Stay signed in when you are away',
  admin: 'Administer Latchkey with your admin rights',
};

export function consentPage(p: FormPage & { scopes: string[]; username: string }): string {
  const items = p.scopes.map((s) => `<li>${escapeHtml(scopeText[s] ?? s)} <code>${escapeHtml(s)}</code></li>`).join('');
  return layout(
    'Allow access',
    `<h1>Allow access?</h1><p class="sub"><strong>${escapeHtml(p.clientName)}</strong> asks to use your account
<strong>${escapeHtml(p.username)}</strong>:</p>${errorBox(p.error)}
<ul class="scopes">${items}</ul>
<form method="post" action="${escapeHtml(p.action)}">
${hidden({ ...p.request, _action: 'consent', csrf_token: p.csrfToken })}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>`,
  );
}

/** The login page's "Sign in with <name>" buttons, one per upstream identity provider (docs/upstream-identity-providers.md). */
export function upstreamButtons(
  t: { action: string; fields: Record<string, string>; csrfToken: string },
  upstreams: Array<{ id: string; name: string }>,
): string {
  return upstreams
    .map(
      (
        u,
      ) => `<form method="post" action="${escapeHtml(t.action)}">${hidden({ ...t.fields, _action: 'upstream', upstream: u.id, csrf_token: t.csrfToken })}
<button type="submit" class="secondary" data-upstream="${escapeHtml(u.id)}">Sign in with ${escapeHtml(u.name)}</button></form>`,
    )
    .join('');
}

/** An upstream identity provider's sign-in that failed (docs/upstream-identity-providers.md): the page names the upstream, never a stack. */
export function upstreamErrorPage(upstream: string, message: string): string {
  return layout(
    'Sign-in error',
    `<h1>Sign-in with ${escapeHtml(upstream)} failed</h1>
<p class="error" role="alert" id="error_description">${escapeHtml(message)}</p>
<p class="sub">Go back to the application and try again. If this keeps happening, tell its administrator.</p>`,
  );
}
