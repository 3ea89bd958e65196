import type { Logger } from 'pino';
import type { AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import type { AddressRules } from '../outbound/address-rules.ts';
import { deliveryLoop, deliverySettler, type DeliveryWorker } from '../outbound/delivery-loop.ts';
import { outboundFetch } from '../outbound/fetch.ts';
import { outboundReason } from '../outbound/outbound-error.ts';
import type { SamlKeys } from './idp-keys.ts';
import { soapLogoutOutcome, soapLogoutRequest } from './logout.ts';
import type { QueuedSamlLogout, ServiceProvider } from './model.ts';
import type { SamlLogoutQueries } from './soap-logout-queries.ts';
import { MAX_MESSAGE_BYTES } from './xml.ts';

/** Per delivery, as for back-channel logout (docs/connect-an-application.md: at most 5 s per client). */
const TIMEOUT_MS = 5000;
/** Requests a process takes at once. */
const BATCH = 20;
/** SAML bindings 3.2.2.1: the SOAPAction a SAML requester may send. */
const SOAP_ACTION = 'http://www.oasis-open.org/committees/security';
/** For the log lines. */
const WHAT = 'SAML logout by SOAP';

export interface SoapLogoutDeps {
  queries: Pick<SamlLogoutQueries, 'claim' | 'remove' | 'retryAt'>;
  findSp(id: string): Promise<ServiceProvider | undefined>;
  keys: SamlKeys;
  /** The IdP's entity ID: the requests' Issuer. */
  issuer: string;
  config: Config;
  audit: AuditLog;
  logger: Logger;
  /** Addresses never called (docs/decisions.md "Outbound fetches"): an SP there fails at connect time. */
  outbound: AddressRules;
}

/**
 * The SAML logout-by-SOAP worker of one process (docs/saml-applications.md "Single logout by SOAP"),
 * the sibling of the back-channel logout worker (src/login/logout-notices.ts) and run the same way:
 * session ends queue requests in the database (session-ends.ts); this claims the due ones, signs a
 * LogoutRequest for each and POSTs it in a SOAP envelope to the SP, off the request that ended the
 * session, retrying on `logout.backchannelRetryDelays`. Every process runs one; the claims keep two
 * from sending the same request, and a claim left by a process that died expires, so another sends it.
 */
export function soapLogouts(deps: SoapLogoutDeps): SoapLogoutWorker {
  const { queries, config, logger } = deps;
  const settle = deliverySettler({
    what: WHAT,
    queue: queries,
    delays: config.logout.backchannelRetryDelays,
    kinds: { delivered: 'logout.saml_soap_delivered', failed: 'logout.saml_soap_failed' },
    audit: deps.audit,
    logger,
  });

  /** Undefined when the SP answered Success; else the fixed reason: never what the SP said. */
  async function post(sp: ServiceProvider, n: QueuedSamlLogout, signal: AbortSignal): Promise<string | undefined> {
    const url = sp.singleLogoutSoapUrl!;
    const { envelope, id } = soapLogoutRequest(
      { issuer: deps.issuer, destination: url, subject: n, now: clock.now() },
      await deps.keys.signer(),
    );
    try {
      const res = await outboundFetch(url, deps.outbound, {
        method: 'POST',
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${SOAP_ACTION}"`, 'cache-control': 'no-store' },
        body: envelope,
        timeoutMs: TIMEOUT_MS,
        maxBytes: MAX_MESSAGE_BYTES,
        signal,
      });
      const outcome = soapLogoutOutcome(res.body.toString('utf8'), id);
      // A SOAP fault comes with a 500 (SOAP 1.1, 6.2): said as a fault; any other failing status as it is.
      if (res.status === 200 || outcome === 'SOAP fault') return outcome;
      return `HTTP ${res.status}`;
    } catch (err) {
      return outboundReason(err);
    }
  }

  async function deliver(n: QueuedSamlLogout, signal: AbortSignal): Promise<number | undefined> {
    const sp = await deps.findSp(n.spId);
    // The SP was changed since: nobody to tell any more (a deleted SP takes its rows with it).
    if (!sp?.singleLogoutSoapUrl) return void (await queries.remove(n.id));
    const error = await post(sp, n, signal);
    return settle(n, signal, {
      error,
      event: { userId: n.userId, clientId: `saml:${sp.id}` },
      details: { entityId: sp.entityId, sessionIndex: n.sessionIndex },
      names: { entityId: sp.entityId },
    });
  }

  return deliveryLoop({
    what: WHAT,
    pollInterval: config.logout.backchannelPollInterval,
    // A claim outlives the longest delivery; when a process dies holding one, another takes it after.
    claim: (now, limit) => queries.claim(now, now + config.logout.backchannelClaimLease, limit),
    deliver,
    describe: (n) => ({ spId: n.spId }),
    logger,
    batch: BATCH,
  });
}

/** Started and stopped with the server; `kick` when requests were queued (and committed) in this process. */
export type SoapLogoutWorker = DeliveryWorker;
