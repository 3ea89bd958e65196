import { errorBox, escapeHtml, hidden, layout } from './layout.ts';
import { scopeText } from './login.ts';

/** The form where the user types the code their device shows (RFC 8628 §3.3). */
export function deviceCodePage(p: { action: string; csrfToken: string; error?: string; userCode?: string }): string {
  return layout(
    'Connect a device',
    `<h1>Connect a device</h1><p class="sub">Enter the code shown on your device.</p>
${errorBox(p.error)}
<form method="post" action="${escapeHtml(p.action)}">
${hidden({ csrf_token: p.csrfToken })}
<label for="user_code">Code</label>
<input id="user_code" name="user_code" type="text" autocomplete="off" autocapitalize="characters" spellcheck="false" required autofocus placeholder="XXXX-XXXX" value="${escapeHtml(p.userCode ?? '')}">
<button type="submit">Continue</button>
</form>`,
  );
}

/** Approve or deny: the client's name, the user, the scopes and the code, to compare with the device's. */
export function deviceApprovalPage(p: {
  action: string;
  csrfToken: string;
  clientName: string;
  username: string;
  scopes: string[];
  userCode: string;
}): string {
  const items = p.scopes.map((s) => `<li>${escapeHtml(scopeText[s] ?? s)} <code>${escapeHtml(s)}</code></li>`).join('');
  return layout(
    'Connect a device',
    `<h1>Connect ${escapeHtml(p.clientName)}?</h1><p class="sub">The device showing <strong id="user_code">${escapeHtml(p.userCode)}</strong>
asks to use your account <strong>${escapeHtml(p.username)}</strong>:</p>
<ul class="scopes">${items}</ul>
<p class="sub">Approve only if you started this on your own device just now.</p>
<form method="post" action="${escapeHtml(p.action)}">
${hidden({ user_code: p.userCode, _action: 'device', csrf_token: p.csrfToken })}
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>`,
  );
}

/** The end of it: the user goes back to the device (or is told why not). */
export function deviceDonePage(title: string, message: string): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1><p class="sub" id="outcome">${escapeHtml(message)}</p>`);
}
