import type { Database } from '../db/database.ts';
import type { DeviceRow } from './model.ts';
import type { DeviceStatus } from './model.ts';

const toRow = (r: Record<string, unknown>): DeviceRow => ({
  deviceCodeHash: String(r.device_code_hash),
  userCode: String(r.user_code),
  clientId: String(r.client_id),
  scope: String(r.scope),
  status: r.status as DeviceStatus,
  userId: (r.user_id as string | null) ?? null,
  sessionId: (r.session_id as string | null) ?? null,
  authTime: r.auth_time == null ? null : Number(r.auth_time),
  amr: (r.amr as string | null) ?? null,
  intervalS: Number(r.interval_s),
  polledAt: r.polled_at == null ? null : Number(r.polled_at),
  expiresAt: Number(r.expires_at),
});

/** The device_codes table (RFC 8628): every change of state is one conditional update. */
export const deviceQueries = ({ knex: db }: Database) => ({
  /** Throws on a taken user code (unique): the service draws another. */
  async insert(row: {
    deviceCodeHash: string;
    userCode: string;
    clientId: string;
    scope: string;
    intervalS: number;
    expiresAt: number;
    now: number;
  }): Promise<void> {
    await db('device_codes').insert({
      device_code_hash: row.deviceCodeHash,
      user_code: row.userCode,
      client_id: row.clientId,
      scope: row.scope,
      status: 'pending',
      interval_s: row.intervalS,
      polled_at: null,
      expires_at: row.expiresAt,
      created_at: row.now,
    });
  },

  async byUserCode(userCode: string): Promise<DeviceRow | undefined> {
    const r = await db('device_codes').where({ user_code: userCode }).first();
    return r ? toRow(r) : undefined;
  },

  async byDeviceCode(hash: string): Promise<DeviceRow | undefined> {
    const r = await db('device_codes').where({ device_code_hash: hash }).first();
    return r ? toRow(r) : undefined;
  },

  /** The user's decision; only a pending, unexpired request takes one. */
  async decide(
    userCode: string,
    decision: { status: 'approved' | 'denied'; userId: string; sessionId: string | null; authTime: number | null; amr: string | null },
    now: number,
  ): Promise<boolean> {
    const n = await db('device_codes').where({ user_code: userCode, status: 'pending' }).andWhere('expires_at', '>', now).update({
      status: decision.status,
      user_id: decision.userId,
      session_id: decision.sessionId,
      auth_time: decision.authTime,
      amr: decision.amr,
    });
    return n > 0;
  },

  /** Records a poll; `intervalS` grows when the device polled too fast. */
  async polled(hash: string, now: number, intervalS: number): Promise<void> {
    await db('device_codes').where({ device_code_hash: hash }).update({ polled_at: now, interval_s: intervalS });
  },

  /** Takes an approved request for its tokens: of concurrent polls, exactly one gets true. */
  async use(hash: string): Promise<boolean> {
    const n = await db('device_codes').where({ device_code_hash: hash, status: 'approved' }).update({ status: 'used' });
    return n > 0;
  },
});

export type DeviceQueries = ReturnType<typeof deviceQueries>;
