import type { Response } from 'express';
import { formPostPage, formPostScriptHash } from '../pages/form-post.ts';
import { styleHash } from '../pages/layout.ts';

/**
 * The HTTP-POST binding: a page whose form carries `SAMLResponse` (and `RelayState`, unchanged) to
 * the SP's checked URL, submitted by its one script. Its CSP allows that script by hash and forms
 * only to that URL's origin.
 */
export function sendPostBinding(res: Response, url: string, fields: Record<string, string | undefined>): void {
  const carried: Record<string, string> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) carried[k] = v;
  res.setHeader(
    'Content-Security-Policy',
    [
      "default-src 'none'",
      `style-src ${styleHash}`,
      `script-src ${formPostScriptHash}`,
      `form-action ${new URL(url).origin}`,
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
  );
  res.status(200).type('html').send(formPostPage(url, carried));
}
