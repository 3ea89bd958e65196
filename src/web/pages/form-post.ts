import { createHash } from 'node:crypto';
import { escapeHtml, hidden, layout } from './layout.ts';

// The one inline script of the page; a constant, so the CSP allows it by its hash, not by 'unsafe-inline'.
const submitScript = 'document.forms[0].submit();';
export const formPostScriptHash = `'sha256-${createHash('sha256').update(submitScript).digest('base64')}'`;

/**
 * OAuth 2.0 Form Post Response Mode: the page that carries the authorization response to the client
 * as a POST. The button is there for a browser that runs no scripts.
 */
export function formPostPage(action: string, fields: Record<string, string>): string {
  return layout(
    'Continue',
    `<h1>Continue to the application</h1>
<form method="post" action="${escapeHtml(action)}">${hidden(fields)}<button type="submit">Continue</button></form>
<script>${submitScript}</script>`,
  );
}
