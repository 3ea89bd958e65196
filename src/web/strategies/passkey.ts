import type { Request } from 'express';
import { Strategy } from 'passport';
import type { SignInService } from '../../login/sign-in.ts';
import { soFarOf } from './so-far.ts';

/**
 * A passkey's answer, posted by the page's script (`webauthn_state`, `webauthn_response`): alone (the
 * credential names the user), after a password, or on a session, as the sign-in so far says. Counted
 * like any sign-in (login/sign-in.ts `passkeyStep`).
 */
export class PasskeyStrategy extends Strategy {
  override name = 'passkey';

  constructor(private readonly signIn: SignInService) {
    super();
  }

  override authenticate(req: Request): void {
    const form = (req.body ?? {}) as Record<string, string | undefined>;
    const { soFar, origin } = soFarOf(req);
    this.signIn
      .passkeyStep({ state: form.webauthn_state, response: form.webauthn_response, user: soFar.user, amr: soFar.amr ?? [], ...origin })
      .then(
        (outcome) => (outcome.ok ? this.success(outcome) : this.fail({ outcome }, 401)),
        (err: unknown) => this.error(err as Error),
      );
  }
}
