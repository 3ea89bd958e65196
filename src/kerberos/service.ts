import { statSync } from 'node:fs';
import type { Logger } from 'pino';
import type { AuditLog } from '../audit/record.ts';
import type { ChainMember, IdentityChain } from '../identity/chain.ts';
import type { AccountRefusal, KerberosSettings } from '../identity/contract.ts';
import type { Amr } from '../login/model.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { User } from '../users/model.ts';
import { readKeytab } from './keytab.ts';
import { KERBEROS_REFUSALS, type KerberosRefusal } from './model.ts';
import { inspectToken } from './spnego.ts';

/** How a Negotiate token ended. */
export type KerberosOutcome =
  /** `mutual`: the answer token for the response's `WWW-Authenticate: Negotiate` (mutual authentication). */
  | { ok: true; user: User; amr: Amr[]; mutual?: string }
  /** `refusal`: with `account_refused`, what the directory (or an administrator) refuses the account for. */
  | { ok: false; reason: KerberosRefusal; refusal?: AccountRefusal }
  /** The user's directory did not answer: nothing was decided. */
  | { ok: false; reason: 'unavailable' };

/** Where a token comes from, as its audit event records it. */
export interface KerberosOrigin {
  ip: string;
  /** '' at the account page. */
  clientId: string;
  requestId: string;
}

/** Desktop single sign-on (docs/identity-backends.md "Desktop single sign-on"). */
export interface KerberosSignIns {
  /** A backend has `kerberos`: the sign-in pages ask browsers for a ticket (`WWW-Authenticate: Negotiate`). */
  readonly enabled: boolean;
  /** A browser's `Authorization: Negotiate` token: signed in, or refused with its audit event and metric. */
  signIn(token: string, origin: KerberosOrigin): Promise<KerberosOutcome>;
}

type KerberosMember = ChainMember & { kerberos: KerberosSettings };

/** Principals and realms compare without case: AD's realms are its DNS names, which a config may write in any case. */
const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
const realmOf = (principal: string) => principal.slice(principal.lastIndexOf('@') + 1);

const OFF: KerberosSignIns = {
  enabled: false,
  signIn: () => Promise.reject(new Error('no identity backend has kerberos configured')),
};

/**
 * The backends with `kerberos`, checked at start (one keytab for all, holding each one's service
 * principal), or off, without loading anything, when none has it.
 */
function kerberosMembers(identity: IdentityChain, publicUrl: string, logger: Logger): KerberosMember[] {
  const members: KerberosMember[] = [];
  for (const m of identity.members) {
    const { kerberos } = m.backend;
    if (!kerberos) continue;
    if (!m.backend.findByPrincipal)
      throw new Error(`identity backend "${m.id}": has kerberos settings but cannot find a user by principal (findByPrincipal)`);
    members.push({ ...m, kerberos });
  }
  const keytabs = new Set(members.map((m) => m.kerberos.keytab));
  // The GSSAPI library reads one keytab per process, from the environment.
  if (keytabs.size > 1)
    throw new Error(
      `the backends with kerberos name ${keytabs.size} keytabs; name one, holding every service principal (ktutil merges keytabs)`,
    );
  const host = new URL(publicUrl).hostname.toLowerCase();
  for (const m of members) {
    const { keytab, servicePrincipal } = m.kerberos;
    let held: string[];
    try {
      held = readKeytab(keytab).map((e) => e.principal.toLowerCase());
    } catch (err) {
      throw new Error(`identity backend "${m.id}": ${(err as Error).message}`);
    }
    if (!held.includes(servicePrincipal.toLowerCase()))
      throw new Error(`identity backend "${m.id}": the keytab ${keytab} holds no key of ${servicePrincipal}`);
    // A keytab is the service's password: anyone who reads it can mint tickets for any user.
    if ((statSync(keytab).mode & 0o077) !== 0)
      logger.warn({ backend: m.id, keytab }, 'the keytab is readable by other users; make it readable by Latchkey only (chmod 0400)');
    const spnHost = servicePrincipal.slice(servicePrincipal.indexOf('/') + 1, servicePrincipal.lastIndexOf('@')).toLowerCase();
    // Browsers ask for HTTP/<the host they see>: a different name works only behind a CNAME they resolve to it.
    if (spnHost !== host)
      logger.warn({ backend: m.id, servicePrincipal, publicUrl }, 'the Kerberos service principal is not for the host of PUBLIC_URL');
  }
  return members;
}

/**
 * Desktop single sign-on (docs/identity-backends.md "Desktop single sign-on"): a browser's Kerberos
 * ticket (SPNEGO, RFC 4559) signs in the directory user its client principal names. The token is read
 * first (spnego.ts: NTLM, and a ticket for another service or realm, are refused by name), then
 * accepted with the keytab (acceptor.ts: expiry, replay, clock skew), then the principal's user is
 * found through its backend, its account state honoured and its record provisioned as at a password
 * sign-in. Each refusal is an audit event (`login.kerberos_refused`) and a count of
 * `latchkey_kerberos_refused_total`. The GSSAPI binding is imported only when a backend has `kerberos`.
 */
export async function kerberosSignIns(deps: {
  identity: IdentityChain;
  audit: Pick<AuditLog, 'record'>;
  metrics: Pick<Metrics, 'login' | 'kerberosRefusals'>;
  logger: Logger;
  publicUrl: string;
}): Promise<KerberosSignIns> {
  const members = kerberosMembers(deps.identity, deps.publicUrl, deps.logger);
  if (members.length === 0) return OFF;
  const { loadAcceptor } = await import('./acceptor.ts');
  const acceptor = await loadAcceptor(members[0]!.kerberos.keytab);
  const count = deps.metrics.kerberosRefusals(KERBEROS_REFUSALS);
  deps.logger.info({ backends: members.map((m) => m.id) }, 'desktop single sign-on (Kerberos) is on');

  return {
    enabled: true,

    async signIn(token, o) {
      const refuse = async (
        reason: KerberosRefusal,
        more: { principal?: string; backend?: string; userId?: string; refusal?: AccountRefusal; detail?: string } = {},
      ): Promise<KerberosOutcome> => {
        count(reason);
        const { principal, backend, userId, refusal, detail } = more;
        await deps.audit.record({
          kind: 'login.kerberos_refused',
          userId: userId ?? null,
          clientId: o.clientId || null,
          ip: o.ip,
          requestId: o.requestId,
          details: { reason, ...(principal ? { principal } : {}), ...(backend ? { backend } : {}), ...(refusal ? { refusal } : {}) },
        });
        // The library's own words, for whoever looks into a refusal (they hold no secret).
        if (detail) deps.logger.info({ reason, detail, requestId: o.requestId }, 'Negotiate token refused');
        return { ok: false, reason, ...(refusal ? { refusal } : {}) };
      };

      const view = inspectToken(token);
      if (view.kind === 'ntlm') return refuse('ntlm');
      if (view.kind === 'invalid') return refuse('invalid_token');
      const ticketFor = `${view.service}@${view.realm}`;
      const member = members.find((m) => same(m.kerberos.servicePrincipal, ticketFor));
      if (!member) {
        const realmKnown = members.some((m) => same(m.kerberos.realm, view.realm));
        return refuse(realmKnown ? 'wrong_service' : 'wrong_realm', { detail: `a ticket for ${ticketFor}` });
      }
      const accepted = await acceptor.accept(token);
      // A fault of the server's own (an unreadable keytab): logged as such, and the user still gets the form, not a 500.
      if (!accepted.ok && accepted.fault)
        deps.logger.error({ err: accepted.detail, requestId: o.requestId }, 'the Kerberos acceptor failed; check the keytab');
      if (!accepted.ok) return refuse(accepted.reason, { backend: member.id, detail: accepted.detail });
      const { principal } = accepted;
      if (!same(accepted.service, member.kerberos.servicePrincipal))
        return refuse('wrong_service', { principal, backend: member.id, detail: `accepted for ${accepted.service}` });
      // A user of a trusting realm: their own realm's directory, not this one, knows them.
      if (!same(realmOf(principal), member.kerberos.realm)) return refuse('wrong_realm', { principal, backend: member.id });

      const result = await deps.identity.signInByPrincipal(member.id, principal);
      if (!result.ok) {
        if (result.reason === 'unavailable') {
          deps.metrics.login(member.id, 'unavailable');
          return { ok: false, reason: 'unavailable' };
        }
        if (result.reason === 'invalid_credentials') return refuse('unknown_principal', { principal, backend: member.id });
        return refuse('account_refused', { principal, backend: member.id, userId: result.user?.id, refusal: result.reason });
      }
      const amr: Amr[] = ['wia'];
      deps.metrics.login(member.id, 'success');
      await deps.audit.record({
        kind: 'login.success',
        userId: result.user.id,
        clientId: o.clientId || null,
        ip: o.ip,
        requestId: o.requestId,
        details: { amr, principal, backend: member.id },
      });
      return { ok: true, user: result.user, amr, ...(accepted.mutual ? { mutual: accepted.mutual } : {}) };
    },
  };
}
