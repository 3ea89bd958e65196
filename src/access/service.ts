import type { Origin } from '../audit/model.ts';
import type { AuditLog } from '../audit/record.ts';
import type { Client } from '../clients/model.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { ServiceProvider } from '../saml/model.ts';
import type { User } from '../users/model.ts';
import type { AccessDecision, AccessPolicy } from './model.ts';
import { decideAccess } from './policy.ts';
import { memberOf } from './release.ts';

/** An application as its access policy is checked: an OAuth client or a SAML service provider. */
export interface Application {
  kind: 'client' | 'saml';
  /** The client id, or the SP's entity ID: the metric's `application` label and the audit event's. */
  id: string;
  /** What the user knows it by: the refusal page names it. */
  name: string;
  access: AccessPolicy;
  /** The audit event's `clientId`: the client id, or `saml:<sp id>` as the SP's other events name it. */
  auditClientId: string;
}

/** A client as an application. */
export const clientApplication = (client: Pick<Client, 'clientId' | 'name' | 'access'>): Application => ({
  kind: 'client',
  id: client.clientId,
  name: client.name,
  access: client.access,
  auditClientId: client.clientId,
});

/** A SAML service provider as an application. */
export const samlApplication = (sp: Pick<ServiceProvider, 'id' | 'entityId' | 'name' | 'access'>): Application => ({
  kind: 'saml',
  id: sp.entityId,
  name: sp.name,
  access: sp.access,
  auditClientId: `saml:${sp.id}`,
});

/**
 * The access policy, checked wherever an application would get something for a user
 * (docs/access-and-claims.md): the authorize endpoint, `/device`, SAML sign-on, the password and
 * refresh grants. A refusal is the act: it writes its `access.denied` event and counts
 * `latchkey_access_denied_total{application}`; an allowed user writes nothing.
 */
export function accessService(deps: { audit: AuditLog; metrics: Pick<Metrics, 'accessDenied'> }) {
  return {
    /** Whether `user` may use `app`, and why; a refusal is audited and counted. */
    async check(app: Application, user: User, origin: Origin): Promise<AccessDecision> {
      const decision = decideAccess(app.access, memberOf(user));
      if (decision.allowed) return decision;
      deps.metrics.accessDenied(app.id);
      await deps.audit.record({
        kind: 'access.denied',
        userId: user.id,
        clientId: app.auditClientId,
        ip: origin.ip,
        requestId: origin.requestId,
        details: { application: app.id, kind: app.kind, reason: decision.reason },
      });
      return decision;
    },
  };
}

export type AccessService = ReturnType<typeof accessService>;
