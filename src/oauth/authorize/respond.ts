import type { Request, Response } from 'express';
import { sendFormPost } from '../../web/form-post.ts';
import { redirectWith, type ResponseMode } from './request.ts';

/**
 * Sends the authorization response (success or error) to the verified redirect URI: a redirect with
 * the fields in the query, or for form_post a page that POSTs them there (src/web/form-post.ts).
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
  sendFormPost(res, redirectUri, params);
}
