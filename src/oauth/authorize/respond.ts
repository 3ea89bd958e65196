import type { Request, Response } from 'express';
import { styleHash } from '../../web/pages/layout.ts';
import { formPostPage, formPostScriptHash } from '../../web/pages/form-post.ts';
import { redirectWith, type ResponseMode } from './request.ts';

/** The CSP source that lets the page post to `uri`: its origin, or its scheme for an app's own scheme. */
function formTarget(uri: string): string {
  const url = new URL(uri);
  return url.origin === 'null' ? url.protocol : url.origin;
}

/**
 * Sends the authorization response (success or error) to the verified redirect URI: a redirect with
 * the fields in the query, or for form_post a page that POSTs them there. That page's CSP replaces
 * the sign-in pages' one for this response only: its script by hash, and forms only to the client.
 */
export function sendAuthorizationResponse(
  req: Request,
  res: Response,
  mode: ResponseMode,
  redirectUri: string,
  params: Record<string, string | undefined>,
): void {
  res.setHeader('Cache-Control', 'no-store');
  if (mode === 'query') {
    res.redirect(req.method === 'POST' ? 303 : 302, redirectWith(redirectUri, params));
    return;
  }
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) if (v !== undefined) fields[k] = v;
  res.setHeader(
    'Content-Security-Policy',
    [
      "default-src 'none'",
      `style-src ${styleHash}`,
      `script-src ${formPostScriptHash}`,
      `form-action ${formTarget(redirectUri)}`,
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
  );
  res.status(200).type('html').send(formPostPage(redirectUri, fields));
}
