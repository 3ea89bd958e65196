import type { Response } from 'express';
import { formPostPage, formPostScriptHash } from './pages/form-post.ts';
import { styleHash } from './pages/layout.ts';

/** The origin a form may post to; a URI whose origin is opaque (a custom scheme) by its scheme alone. */
function formTarget(uri: string): string {
  const url = new URL(uri);
  return url.origin === 'null' ? url.protocol : url.origin;
}

/**
 * A page whose form carries `fields` to `url`, submitted by its one script: OAuth's `form_post`
 * response mode and SAML's HTTP-POST binding (`SAMLResponse`, `RelayState` unchanged). Fields left
 * undefined are not sent. Its CSP replaces the sign-in pages' one for this response only: that
 * script by hash, and forms only to the target's origin.
 */
export function sendFormPost(res: Response, url: string, fields: Record<string, string | undefined>): void {
  const carried: Record<string, string> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) carried[k] = v;
  res.setHeader(
    'Content-Security-Policy',
    [
      "default-src 'none'",
      `style-src ${styleHash}`,
      `script-src ${formPostScriptHash}`,
      `form-action ${formTarget(url)}`,
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
  );
  res.status(200).type('html').send(formPostPage(url, carried));
}
