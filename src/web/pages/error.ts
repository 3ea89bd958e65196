import { escapeHtml, layout } from './layout.ts';

/** The page of a request that cannot go on: a sign-in (authorize) or a sign-out (logout) request. */
export function errorPage(error: string, description: string, request: 'sign-in' | 'sign-out' = 'sign-in'): string {
  return layout(
    request === 'sign-in' ? 'Sign-in error' : 'Sign-out error',
    `<h1>This ${request} request cannot be completed</h1>
<p class="error" role="alert"><code id="error">${escapeHtml(error)}</code>: <span id="error_description">${escapeHtml(description)}</span></p>
<p class="sub">Go back to the application and try again. If this keeps happening, tell its administrator.</p>`,
  );
}
