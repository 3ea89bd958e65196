import type { RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { attemptOf } from '../attempt.ts';
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
 * `purpose=reset`: the user's own at a password reset's second step (`token`, the reset link's);
 * `purpose=register`: a new credential for the signed-in user. CSRF-checked like the forms, and
 * counted per address: each answer stores a challenge (429 with `Retry-After` past the limit).
 */
export function passkeyOptionsHandler(ctx: AppContext): RequestHandler {
  return async (req, res, next) => {
    try {
      res.setHeader('Cache-Control', 'no-store');
      const body = (req.body ?? {}) as Record<string, string>;
      const passkeys = ctx.mfa.passkeys;
      if (!passkeys.enabled)
        return void res.status(404).json({ error: 'invalid_request', error_description: 'passkeys are off: PUBLIC_URL is an IP address' });
      if (!checkCsrfToken(req, ctx.csrfKey, body.csrf_token))
        return void res.status(403).json({ error: 'invalid_request', error_description: 'the form expired; reload the page' });
      const { ip, requestId, deviceCookie } = attemptOf(req, '');
      const wait = await ctx.passkeyOptionLimit.take(ip);
      if (wait > 0) {
        res.setHeader('Retry-After', String(wait));
        return void res
          .status(429)
          .json({ error: 'invalid_request', error_description: `too many passkey requests from this address, retry after ${wait} s` });
      }
      if (body.purpose === 'register') {
        const signedIn = await currentSession(ctx, req);
        if (!signedIn) return void res.status(401).json({ error: 'login_required', error_description: 'sign in first' });
        return void res.json(await passkeys.registrationOptions(signedIn.user));
      }
      if (body.purpose === 'reset') {
        const reset = await ctx.passwordReset.passkeyOptions(body.token, { ip, requestId, deviceCookie });
        if (!reset)
          return void res
            .status(400)
            .json({ error: 'invalid_request', error_description: 'this reset link cannot be used with a passkey' });
        return void res.json(reset);
      }
      const pending = body.pending ? openPending(ctx.csrfKey, body.pending) : undefined;
      const signedIn = pending ? undefined : await currentSession(ctx, req);
      res.json(await passkeys.authenticationOptions(pending?.userId ?? signedIn?.user.id));
    } catch (err) {
      next(err);
    }
  };
}
