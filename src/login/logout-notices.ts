import type { Logger } from 'pino';
import type { AuditLog } from '../audit/record.ts';
import type { Client } from '../clients/model.ts';
import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import type { SigningKeys } from '../keys/signing-keys.ts';
import type { AddressRules } from '../outbound/address-rules.ts';
import { deliveryLoop, deliverySettler, type DeliveryWorker } from '../outbound/delivery-loop.ts';
import { outboundFetch } from '../outbound/fetch.ts';
import { outboundReason } from '../outbound/outbound-error.ts';
import type { BackchannelQueries } from './backchannel-queries.ts';
import type { QueuedLogout } from './model.ts';

const EVENT = 'http://schemas.openid.net/event/backchannel-logout';
/** For the log lines. */
const WHAT = 'back-channel logout';
/** Per delivery (docs/connect-an-application.md: at most 5 s per client). */
const TIMEOUT_MS = 5000;
/** Notices a process takes at once. */
const BATCH = 20;
/** A logout token says one thing once: it is good for two minutes. */
const TOKEN_TTL_S = 120;

export interface LogoutNoticeDeps {
  queries: BackchannelQueries;
  findClient(clientId: string): Promise<Client | undefined>;
  keys: SigningKeys;
  config: Config;
  audit: AuditLog;
  logger: Logger;
  /** Addresses never called (docs/decisions.md "Outbound fetches"): a receiver there fails at connect time. */
  outbound: AddressRules;
}

/**
 * The back-channel logout worker of one process (OpenID Connect Back-Channel Logout 1.0). Session
 * ends queue notices in the database (session-ends.ts); this claims the due ones, signs a
 * `logout_token` for each and POSTs it to the client, off the request that ended the session. Every
 * process runs one; the claims keep two from sending the same notice, and a claim left by a process
 * that died expires, so another delivers it.
 */
export function logoutNotices(deps: LogoutNoticeDeps): LogoutNoticeWorker {
  const { queries, config, logger } = deps;
  const settle = deliverySettler({
    what: WHAT,
    queue: queries,
    delays: config.logout.backchannelRetryDelays,
    kinds: { delivered: 'logout.backchannel_delivered', failed: 'logout.backchannel_failed' },
    audit: deps.audit,
    logger,
  });

  /** Undefined when delivered; else the fixed reason (src/outbound/): never what the receiver said. */
  async function post(uri: string, logoutToken: string, signal: AbortSignal): Promise<string | undefined> {
    try {
      const res = await outboundFetch(uri, deps.outbound, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'cache-control': 'no-store' },
        body: new URLSearchParams({ logout_token: logoutToken }).toString(),
        timeoutMs: TIMEOUT_MS,
        maxBytes: 0,
        statusOnly: true,
        signal,
      });
      return res.status >= 200 && res.status < 300 ? undefined : `HTTP ${res.status}`;
    } catch (err) {
      return outboundReason(err);
    }
  }

  async function deliver(n: QueuedLogout, signal: AbortSignal): Promise<number | undefined> {
    const client = await deps.findClient(n.clientId);
    // The client was changed since: nobody to tell any more.
    if (!client?.backchannelLogoutUri) return void (await queries.remove(n.id));
    const iat = Math.floor(clock.now() / 1000);
    const token = await deps.keys.sign(
      {
        iss: config.publicUrl,
        aud: client.clientId,
        iat,
        exp: iat + TOKEN_TTL_S,
        jti: n.id,
        sub: n.userId,
        sid: n.sid,
        events: { [EVENT]: {} },
      },
      client.idTokenAlg,
      'logout+jwt',
    );
    const error = await post(client.backchannelLogoutUri, token, signal);
    return settle(n, signal, {
      error,
      event: { userId: n.userId, clientId: n.clientId },
      details: { sid: n.sid },
      names: { clientId: n.clientId },
    });
  }

  return deliveryLoop({
    what: WHAT,
    pollInterval: config.logout.backchannelPollInterval,
    // A claim outlives the longest delivery; when a process dies holding one, another takes it after.
    claim: (now, limit) => queries.claim(now, now + config.logout.backchannelClaimLease, limit),
    deliver,
    describe: (n) => ({ clientId: n.clientId }),
    logger,
    batch: BATCH,
  });
}

/** Started and stopped with the server; `kick` when notices were queued (and committed) in this process. */
export type LogoutNoticeWorker = DeliveryWorker;
