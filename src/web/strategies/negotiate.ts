import type { Request } from 'express';
import { Strategy } from 'passport';
import type { KerberosSignIns } from '../../kerberos/service.ts';
import { soFarOf } from './so-far.ts';

/** The token of an `Authorization: Negotiate <token>` header (RFC 4559), if the request has one. */
export const negotiateToken = (req: Request): string | undefined =>
  /^Negotiate +([A-Za-z0-9+/]+={0,2}) *$/i.exec(req.headers.authorization ?? '')?.[1];

/**
 * A browser's Kerberos ticket (docs/identity-backends.md "Desktop single sign-on"), sent as `Authorization:
 * Negotiate` after the login page's challenge: through the Kerberos sign-in service, which audits and
 * counts every refusal. A refusal is an answer (`info.outcome`); only a fault is an error.
 */
export class NegotiateStrategy extends Strategy {
  override name = 'negotiate';

  constructor(private readonly kerberos: KerberosSignIns) {
    super();
  }

  override authenticate(req: Request): void {
    const { ip, clientId, requestId } = soFarOf(req).origin;
    const token = negotiateToken(req);
    if (!token) {
      this.fail({ outcome: { ok: false, reason: 'invalid_token' } }, 401);
      return;
    }
    this.kerberos.signIn(token, { ip, clientId, requestId }).then(
      (outcome) => (outcome.ok ? this.success(outcome) : this.fail({ outcome }, 401)),
      (err: unknown) => this.error(err as Error),
    );
  }
}
