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
 * "Forgot your password?" link (SPEC 12), when resets by mail are on.
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
