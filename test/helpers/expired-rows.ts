import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/** Rows of every purged table, by table. */
export type RowCounts = Record<
  | 'auth_codes'
  | 'access_tokens'
  | 'refresh_tokens'
  | 'sso_sessions'
  | 'login_throttle'
  | 'audit_events'
  | 'webauthn_challenges'
  | 'pending_sign_ins'
  | 'client_assertion_jtis'
  | 'device_codes'
  | 'password_reset_tokens'
  | 'upstream_sign_ins'
  | 'saml_request_ids'
  | 'saml_session_participants'
  | 'webhook_deliveries',
  number
>;

const hex = () => randomBytes(32).toString('hex');

/**
 * Writes `n` dead rows (expired, or for throttle rows and audit events, old) spread over the purged
 * tables, in chunks, as a long-running deployment accumulates them: most are access tokens.
 * `expiredAt` is a time in the past (ms). Returns how many went into each table.
 */
export async function seedDeadRows(
  sql: Knex,
  n: number,
  o: { clientId: string; userId: string; expiredAt: number; chunk?: number },
): Promise<RowCounts> {
  const share = {
    access_tokens: 0.58,
    refresh_tokens: 0.15,
    auth_codes: 0.1,
    sso_sessions: 0.05,
    login_throttle: 0.05,
    audit_events: 0.02,
    webauthn_challenges: 0.01,
    pending_sign_ins: 0.005,
    client_assertion_jtis: 0.005,
    device_codes: 0.01,
    password_reset_tokens: 0.005,
    upstream_sign_ins: 0.005,
    saml_request_ids: 0.005,
    saml_session_participants: 0.005,
    webhook_deliveries: 0.005,
  };
  const counts = {} as RowCounts;
  const chunk = o.chunk ?? 500;
  const at = o.expiredAt;
  const make: Record<keyof RowCounts, () => Record<string, unknown>> = {
    access_tokens: () => ({
      token_hash: hex(),
      client_id: o.clientId,
      user_id: o.userId,
      scope: 'openid',
      expires_at: at,
      created_at: at - 3600_000,
    }),
    refresh_tokens: () => ({
      token_hash: hex(),
      family_id: randomUUID(),
      client_id: o.clientId,
      user_id: o.userId,
      scope: 'openid',
      expires_at: at,
      created_at: at - 3600_000,
      revoked_at: at - 60_000,
    }),
    auth_codes: () => ({
      code_hash: hex(),
      client_id: o.clientId,
      user_id: o.userId,
      redirect_uri: 'http://localhost/cb',
      scope: 'openid',
      auth_time: at,
      expires_at: at,
      created_at: at - 60_000,
      consumed_at: at - 30_000,
    }),
    sso_sessions: () => ({
      id_hash: hex(),
      user_id: o.userId,
      auth_time: at - 8 * 3600_000,
      expires_at: at,
      created_at: at - 8 * 3600_000,
    }),
    login_throttle: () => ({ key: hex(), failures: 3, window_start: at - 24 * 3600_000, blocked_until: 0 }),
    audit_events: () => ({ at: at - 200 * 24 * 3600_000, kind: 'login.failure', client_id: o.clientId }),
    webauthn_challenges: () => ({ challenge: hex(), purpose: 'login', user_id: null, used_at: null, expires_at: at }),
    pending_sign_ins: () => ({ id: hex(), user_id: o.userId, expires_at: at }),
    client_assertion_jtis: () => ({ client_id: o.clientId, jti: hex(), expires_at: at }),
    device_codes: () => ({
      device_code_hash: hex().slice(0, 43),
      user_code: hex().slice(0, 8).toUpperCase(),
      client_id: o.clientId,
      scope: 'openid',
      status: 'pending',
      interval_s: 5,
      expires_at: at,
      created_at: at - 600_000,
    }),
    password_reset_tokens: () => ({ token_hash: hex(), user_id: o.userId, expires_at: at, used_at: null, created_at: at - 900_000 }),
    upstream_sign_ins: () => ({ id: hex().slice(0, 43), upstream_id: 'corp', data: 'x', expires_at: at }),
    saml_request_ids: () => ({ id_hash: hex(), expires_at: at }),
    saml_session_participants: () => ({ session_id: hex(), sp_id: spId, name_id: hex(), name_id_format: 'persistent', expires_at: at }),
    webhook_deliveries: () => ({
      webhook_id: webhookId,
      event_id: ++eventId,
      kind: 'login.failure',
      attempt: 1,
      status: 'delivered',
      http_status: 200,
      at: at - 30 * 24 * 3600_000,
      expires_at: at,
    }),
  };
  // The participants name a service provider: one, made for them; the deliveries a webhook.
  const spId = randomUUID();
  const webhookId = randomUUID();
  let eventId = 0;
  await sql('webhooks').insert({
    id: webhookId,
    url: 'https://hooks.example/seeded',
    events: '["*"]',
    description: '',
    secret_enc: 'sealed',
    created_at: at,
    updated_at: at,
  });
  await sql('saml_service_providers').insert({
    id: spId,
    entity_id: `https://sp.example/${spId}`,
    name: 'seeded',
    acs_urls: '[]',
    name_id_format: 'persistent',
    attributes: '[]',
    created_at: at,
    updated_at: at,
  });
  for (const [table, part] of Object.entries(share) as Array<[keyof RowCounts, number]>) {
    const total = Math.round(n * part);
    counts[table] = total;
    for (let done = 0; done < total; done += chunk) {
      const rows = Array.from({ length: Math.min(chunk, total - done) }, make[table]);
      await sql.batchInsert(table, rows, Math.floor(chunk / 2));
    }
  }
  return counts;
}

/** How many rows each purged table holds. */
export async function countRows(sql: Knex): Promise<RowCounts> {
  const counts = {} as RowCounts;
  for (const table of [
    'auth_codes',
    'access_tokens',
    'refresh_tokens',
    'sso_sessions',
    'login_throttle',
    'audit_events',
    'webauthn_challenges',
    'pending_sign_ins',
    'client_assertion_jtis',
    'device_codes',
    'password_reset_tokens',
    'upstream_sign_ins',
    'saml_request_ids',
    'saml_session_participants',
    'webhook_deliveries',
  ] as const) {
    const [row] = await sql(table).count({ n: '*' });
    counts[table] = Number(row!.n);
  }
  return counts;
}
