import { randomInt } from 'node:crypto';
import type { Client } from '../clients/model.ts';
import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import { hashToken, randomToken } from '../crypto/tokens.ts';
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

export type FoundRequest =
  | { ok: true; row: DeviceRow }
  | { ok: false; reason: 'throttled'; retryAfter: number }
  | { ok: false; reason: 'unknown' | 'expired' | 'decided' };

export type Poll =
  | { state: 'approved'; row: DeviceRow; amr: Amr[] | null }
  | { state: 'invalid' | 'other_client' | 'expired' | 'pending' | 'slow_down' | 'denied' };

/**
 * The device authorization grant's rules (RFC 8628): a request, the user's decision at /device, and
 * the device's polls. The device code is a bearer secret, kept hashed; tokens go out once.
 */
export const deviceCodes = (queries: DeviceQueries, config: Config, guesses: GuessCounter) => ({
  async start(client: Client, scopes: string[]): Promise<{ deviceCode: string; userCode: string; expiresIn: number; interval: number }> {
    const deviceCode = randomToken();
    const now = clock.now();
    const ttl = config.tokens.deviceCodeTtl;
    // A user code collides with a live one about once in 20^8 / live requests: draw again then.
    for (let attempt = 0; ; attempt++) {
      const userCode = drawUserCode();
      try {
        await queries.insert({ deviceCodeHash: hashToken(deviceCode), userCode, clientId: client.clientId, scope: scopes.join(' '), intervalS: DEVICE_INTERVAL, expiresAt: now + ttl * 1000, now });
        return { deviceCode, userCode: showUserCode(userCode), expiresIn: ttl, interval: DEVICE_INTERVAL };
      } catch (err) {
        if (attempt >= 2) throw err;
      }
    }
  },

  /** The request a user typed the code of. A code that finds none counts against the address. */
  async find(input: string, ip: string): Promise<FoundRequest> {
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
  },

  /** The user's answer; false when the request was decided or expired meanwhile. */
  decide: (row: DeviceRow, approve: boolean, by: { userId: string; sessionId: string | null; authTime: number | null; amr: Amr[] }) =>
    queries.decide(row.userCode, { status: approve ? 'approved' : 'denied', userId: by.userId, sessionId: by.sessionId, authTime: by.authTime, amr: JSON.stringify(by.amr) }, clock.now()),

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
