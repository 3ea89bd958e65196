import type { RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { checkCsrfToken } from '../csrf.ts';
import { currentSession } from '../current-session.ts';
import { openPending } from '../pending-sign-in.ts';
import { passkeyScript } from './script.ts';

/** `GET /assets/passkey.js`: the pages' one script (see script.ts). */
export const passkeyScriptHandler: RequestHandler = (_req, res) => {
  res.setHeader('Cache-Control', 'public, max-age=3600');
  res.type('application/javascript').send(passkeyScript);
};

/**
 * `POST /passkey/options`: the WebAuthn options for the page's script, their challenge stored on the
 * server for one use (the `state` the page posts back).
 * `purpose=login`: any discoverable credential, or the user's own at a second step (`pending`);
 * `purpose=register`: a new credential for the signed-in user. CSRF-checked like the forms.
 */
export function passkeyOptionsHandler(ctx: AppContext): RequestHandler {
  return async (req, res, next) => {
    try {
      res.setHeader('Cache-Control', 'no-store');
      const body = (req.body ?? {}) as Record<string, string>;
      const passkeys = ctx.mfa.passkeys;
      if (!passkeys.enabled) return void res.status(404).json({ error: 'invalid_request', error_description: 'passkeys are off: PUBLIC_URL is an IP address' });
      if (!checkCsrfToken(req, ctx.csrfKey, body.csrf_token)) return void res.status(403).json({ error: 'invalid_request', error_description: 'the form expired; reload the page' });
      if (body.purpose === 'register') {
        const signedIn = await currentSession(ctx, req);
        if (!signedIn) return void res.status(401).json({ error: 'login_required', error_description: 'sign in first' });
        return void res.json(await passkeys.registrationOptions(signedIn.user));
      }
      const pending = body.pending ? openPending(ctx.csrfKey, body.pending) : undefined;
      const signedIn = pending ? undefined : await currentSession(ctx, req);
      res.json(await passkeys.authenticationOptions(pending?.userId ?? signedIn?.user.id));
    } catch (err) {
      next(err);
    }
  };
}
