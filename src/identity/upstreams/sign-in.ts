import type { Logger } from 'pino';
import type { AuditLog } from '../../audit/record.ts';
import type { Metrics } from '../../metrics/registry.ts';
import type { Amr } from '../../login/model.ts';
import type { User } from '../../users/model.ts';
import type { IdentityChain } from '../chain.ts';
import type { Upstream, UpstreamFault, UpstreamIdentity } from './contract.ts';
import { upstreamRoles, upstreamUsername } from './policy.ts';

/** Where a callback comes from: what its events record. */
export interface CallbackOrigin {
  ip: string;
  requestId: string;
  clientId: string;
}

/** Failed callbacks from one address count like wrong passwords against it (the device codes' counter). */
interface AddressGuesses {
  retryAfter(ip: string): Promise<number>;
  failed(ip: string): Promise<void>;
}

/** Round trips started from one address: counted, and refused past the limit. */
interface AddressStarts {
  /** Counts a start and answers 0, or answers the seconds to wait. */
  start(ip: string): Promise<number>;
}

type Deps = {
  identity: Pick<IdentityChain, 'provision'>;
  audit: AuditLog;
  metrics: Pick<Metrics, 'login'>;
  guesses: AddressGuesses;
  starts: AddressStarts;
  logger: Logger;
  /**
   * The SCIM user an upstream's sign-in is linked to (docs/scim-provisioning.md "How SCIM users sign
   * in"), by the upstream's username, if any: that user signs in, as their SCIM record says, instead of
   * an upstream record; a disabled or retired one is refused.
   */
  linked?: (upstreamId: string, claimed: { username: string }) => Promise<User | undefined>;
};

export type UpstreamOutcome = { ok: true; user: User; amr: Amr[] } | { ok: false; fault: UpstreamFault };

/** The user's email domain, lower case; undefined without an email. */
const domainOf = (email: string | null | undefined): string | undefined => email?.split('@').pop()?.toLowerCase();

/**
 * What Latchkey does with an upstream's answer (docs/upstream-identity-providers.md): its own policy on the user (allowed email
 * domains, admin groups, a disabled local record), the local record keyed by (upstream id, `sub`),
 * the factors the session starts with, and the audit trail. A failure of any kind is one log line,
 * one audit event and, unless the upstream was merely unreachable, one failure counted against the
 * address, so a flood of forged callbacks gets the address blocked like a password guesser.
 */
export function upstreamSignIns(deps: Deps) {
  async function refused(upstream: Upstream, fault: UpstreamFault, o: CallbackOrigin, userId?: string): Promise<UpstreamOutcome> {
    deps.metrics.login(upstream.id, fault.unavailable ? 'unavailable' : 'failure');
    deps.logger.warn(
      { upstream: upstream.id, reason: fault.reason, requestId: o.requestId },
      fault.unavailable ? 'upstream unavailable' : 'upstream sign-in refused',
    );
    if (!fault.unavailable) await deps.guesses.failed(o.ip);
    await deps.audit.record({
      kind: 'login.failure',
      ...(userId ? { userId } : {}),
      clientId: o.clientId || null,
      ip: o.ip,
      requestId: o.requestId,
      details: { upstream: upstream.id, reason: fault.reason, ...(fault.unavailable ? { unavailable: true } : {}) },
    });
    return { ok: false, fault };
  }

  return {
    /**
     * A round trip to `upstream` about to start from `o.ip` (the login page's choice or `?idp=`): 0
     * when it may (it is counted), else the seconds the address must wait. Called before anything is
     * fetched or stored; a refusal is logged once per start refused, not audited (it is a flood).
     */
    async starting(upstream: Upstream, o: Pick<CallbackOrigin, 'ip' | 'requestId'>): Promise<number> {
      const wait = await deps.starts.start(o.ip);
      if (wait > 0)
        deps.logger.warn(
          { upstream: upstream.id, requestId: o.requestId, retryAfter: wait },
          'too many upstream sign-ins started from one address',
        );
      return wait;
    },

    /** Seconds this address must wait before its next callback is looked at; 0 when it may now. */
    retryAfter: (ip: string): Promise<number> => deps.guesses.retryAfter(ip),

    /** A callback that failed before a user was known (a forged state, an error answer, a bad id_token, an outage). */
    refused: (upstream: Upstream, fault: UpstreamFault, o: CallbackOrigin) => refused(upstream, fault, o),

    /** The upstream vouched for `identity`: Latchkey's policy, the local record, the session's factors. */
    async complete(upstream: Upstream, identity: UpstreamIdentity, o: CallbackOrigin): Promise<UpstreamOutcome> {
      const { allowedDomains, trustMfa } = upstream.policy;
      const roles = upstreamRoles(upstream.policy, identity.groups);
      const domain = domainOf(identity.email);
      if (allowedDomains && (!domain || !allowedDomains.includes(domain))) {
        return refused(
          upstream,
          {
            unavailable: false,
            reason: domain
              ? `the email domain ${domain} is not allowed here`
              : 'the upstream gave no verified email, which this server requires',
          },
          o,
        );
      }
      // A linked SCIM user is theirs as provisioned (groups, attributes, roles, disabled): nothing of the upstream is copied.
      // Matched by the username alone: the upstream puts its verified email there only when it sends no
      // username claim, so one person's email never reaches another's SCIM record. A deprovisioned or
      // deleted SCIM user is found too, and refused below, never signed in as an ordinary upstream user.
      const linked = await deps.linked?.(upstream.id, { username: identity.username });
      const user =
        linked ??
        (await deps.identity.provision(
          upstream.id,
          {
            externalId: identity.subject,
            username: upstreamUsername(upstream.id, upstream.policy, identity.username),
            email: identity.email,
            displayName: identity.displayName,
            groups: identity.groups,
            // With adminGroups or adminRoleGroups configured, the upstream's groups own the roles; without, the administrators do.
            ...(roles ? { roles } : {}),
            // Its extraClaims are the upstream's to keep current (docs/access-and-claims.md).
            ...(identity.attributes ? { attributes: identity.attributes } : {}),
          },
          // Another user of the upstream holds the name (renamed at the upstream, or a reused one): this
          // one gets a name from its `sub` rather than taking the name, and locking the other out.
          { fallbackUsername: upstreamUsername(upstream.id, upstream.policy, `sub-${identity.subject}`), claimedEmail: true },
        ));
      if (user.disabled) return refused(upstream, { unavailable: false, reason: 'this account is disabled here' }, o, user.id);
      // The upstream's second factor counts as Latchkey's only when the operator trusts it to say so.
      const amr: Amr[] = trustMfa && identity.amr.includes('mfa') ? ['fed', 'mfa'] : ['fed'];
      deps.metrics.login(upstream.id, 'success');
      await deps.audit.record({
        kind: 'login.success',
        userId: user.id,
        clientId: o.clientId || null,
        ip: o.ip,
        requestId: o.requestId,
        details: { amr, upstream: upstream.id, upstreamAmr: identity.amr, ...(linked ? { linked: linked.backend } : {}) },
      });
      return { ok: true, user, amr };
    },
  };
}

export type UpstreamSignIns = ReturnType<typeof upstreamSignIns>;
