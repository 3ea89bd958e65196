import { randomInt } from 'node:crypto';
import type { AuditLog } from '../audit/record.ts';
import type { Origin } from '../audit/model.ts';
import type { Client } from '../clients/model.ts';
import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import { hashToken, randomToken } from '../crypto/tokens.ts';
import type { Transaction } from '../db/transaction.ts';
import type { Amr } from '../login/model.ts';
import type { DeviceQueries } from './device-queries.ts';
import type { DeviceRow } from './model.ts';

/** RFC 8628 §6.1: no vowels (no words), no look-alikes; 20^8 codes. */
const ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
/** Seconds between polls (RFC 8628 `interval`); slow_down adds 5 each time. */
export const DEVICE_INTERVAL = 5;

/** `XXXX-XXXX`, as shown to the user. */
export const showUserCode = (code: string): string => `${code.slice(0, 4)}-${code.slice(4)}`;

/** A typed code as stored: case-insensitive, dash and spaces optional; undefined when it cannot be one. */
export function normaliseUserCode(input: string): string | undefined {
  const code = input.toUpperCase().replace(/[\s-]/g, '');
  return code.length === 8 && [...code].every((c) => ALPHABET.includes(c)) ? code : undefined;
}

const drawUserCode = () => Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');

/** Counts wrong user codes per address (the brute-force policy's address key). */
export interface GuessCounter {
  retryAfter(ip: string): Promise<number>;
  failed(ip: string): Promise<void>;
}

/**
 * The request a typed code found, with its client; or why none is there to decide. `no_client`: its
 * client is gone or may not use OAuth; `sso_disabled`: its client may not use single sign-on (as at
 * the authorize endpoint, `app_unsupport_sso`), so no browser sign-in for it.
 */
export type FoundRequest =
  | { ok: true; row: DeviceRow; client: Client }
  | { ok: false; reason: 'throttled'; retryAfter: number }
  | { ok: false; reason: 'unknown' | 'expired' | 'decided' | 'no_client' }
  | { ok: false; reason: 'sso_disabled'; client: Client };

/** Who decided at /device, in which sign-in, and the scopes the approval page showed them. */
export interface DeviceDecision {
  userId: string;
  sessionId: string | null;
  authTime: number | null;
  amr: Amr[];
  scopes: string[];
}

/** What the device rules need besides their queries: the clients, the audit trail, and a transaction for a decision and its event. */
export interface DeviceDeps {
  findClient(clientId: string): Promise<Client | undefined>;
  audit: Pick<AuditLog, 'record'>;
  transaction: Transaction<{ queries: { devices: DeviceQueries }; audit: Pick<AuditLog, 'record'> }>;
}

export type Poll =
  | { state: 'approved'; row: DeviceRow; amr: Amr[] | null }
  | { state: 'invalid' | 'other_client' | 'expired' | 'pending' | 'slow_down' | 'denied' };

/** The pending request of a typed code, before its client is looked at. A code that finds none counts against the address. */
type Looked = Exclude<FoundRequest, { client: Client }> | { ok: true; row: DeviceRow };

async function lookUp(queries: DeviceQueries, guesses: GuessCounter, input: string, ip: string): Promise<Looked> {
  const retryAfter = await guesses.retryAfter(ip);
  if (retryAfter > 0) return { ok: false, reason: 'throttled', retryAfter };
  const code = normaliseUserCode(input);
  const row = code ? await queries.byUserCode(code) : undefined;
  if (!row) {
    await guesses.failed(ip);
    return { ok: false, reason: 'unknown' };
  }
  if (row.expiresAt <= clock.now()) return { ok: false, reason: 'expired' };
  if (row.status !== 'pending') return { ok: false, reason: 'decided' };
  return { ok: true, row };
}

/**
 * The device authorization grant's rules (RFC 8628): a request, the user's decision at /device, and
 * the device's polls. The device code is a bearer secret, kept hashed; tokens go out once.
 */
export const deviceCodes = (queries: DeviceQueries, config: Config, guesses: GuessCounter, deps: DeviceDeps) => ({
  async start(client: Client, scopes: string[]): Promise<{ deviceCode: string; userCode: string; expiresIn: number; interval: number }> {
    const deviceCode = randomToken();
    const now = clock.now();
    const ttl = config.tokens.deviceCodeTtl;
    // A user code collides with a live one about once in 20^8 / live requests: draw again then.
    for (let attempt = 0; ; attempt++) {
      const userCode = drawUserCode();
      try {
        await queries.insert({
          deviceCodeHash: hashToken(deviceCode),
          userCode,
          clientId: client.clientId,
          scope: scopes.join(' '),
          intervalS: DEVICE_INTERVAL,
          expiresAt: now + ttl * 1000,
          now,
        });
        return { deviceCode, userCode: showUserCode(userCode), expiresIn: ttl, interval: DEVICE_INTERVAL };
      } catch (err) {
        if (attempt >= 2) throw err;
      }
    }
  },

  /**
   * The request a user typed the code of (`ip`: the address the brute-force policy counts), and its
   * client. A code that finds none counts against the address; every refusal is audited
   * (`device.code_refused`, never with the code typed: a live one would be a credential), but for a
   * client gone or no longer allowed OAuth.
   */
  async find(input: string, ip: string, origin: Origin): Promise<FoundRequest> {
    const found = await lookUp(queries, guesses, input, ip);
    if (found.ok) {
      const client = await deps.findClient(found.row.clientId);
      if (!client?.oauthEnabled) return { ok: false, reason: 'no_client' };
      if (client.ssoEnabled) return { ...found, client };
      await deps.audit.record({
        kind: 'device.code_refused',
        clientId: client.clientId,
        ip: origin.ip,
        requestId: origin.requestId,
        details: { reason: 'sso_disabled' },
      });
      return { ok: false, reason: 'sso_disabled', client };
    }
    await deps.audit.record({ kind: 'device.code_refused', ip: origin.ip, requestId: origin.requestId, details: { reason: found.reason } });
    return found;
  },

  /**
   * The user's answer, with its audit event (`consent.granted` or `consent.denied`, `device: true`) in
   * one transaction; false when the request was decided or expired meanwhile (nothing audited then).
   */
  decide: (row: DeviceRow, approve: boolean, by: DeviceDecision, origin: Origin): Promise<boolean> =>
    deps.transaction(async (tx) => {
      const decision = {
        status: approve ? ('approved' as const) : ('denied' as const),
        userId: by.userId,
        sessionId: by.sessionId,
        authTime: by.authTime,
        amr: JSON.stringify(by.amr),
      };
      if (!(await tx.queries.devices.decide(row.userCode, decision, clock.now()))) return false;
      await tx.audit.record({
        kind: approve ? 'consent.granted' : 'consent.denied',
        userId: by.userId,
        clientId: row.clientId,
        ip: origin.ip,
        requestId: origin.requestId,
        details: { scopes: by.scopes, device: true },
      });
      return true;
    }),

  /** A device's poll (RFC 8628 §3.5). An approved request is taken by one atomic update: one poll wins. */
  async poll(deviceCode: string, clientId: string): Promise<Poll> {
    const now = clock.now();
    const hash = hashToken(deviceCode);
    const row = await queries.byDeviceCode(hash);
    if (!row || row.status === 'used') return { state: 'invalid' };
    if (row.clientId !== clientId) return { state: 'other_client' };
    if (row.expiresAt <= now) return { state: 'expired' };
    if (row.status === 'denied') return { state: 'denied' };
    if (row.status === 'pending') {
      const tooSoon = row.polledAt !== null && now - row.polledAt < row.intervalS * 1000;
      await queries.polled(hash, now, tooSoon ? row.intervalS + 5 : row.intervalS);
      return { state: tooSoon ? 'slow_down' : 'pending' };
    }
    if (!(await queries.use(hash))) return { state: 'invalid' };
    return { state: 'approved', row, amr: row.amr ? (JSON.parse(row.amr) as Amr[]) : null };
  },
});

export type DeviceCodes = ReturnType<typeof deviceCodes>;
