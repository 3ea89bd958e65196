import type { FillSql } from './scale-sql.ts';
import type { Templates } from './scale-template.ts';

/** Issue 37's enterprise size: what a database holds after years of a large deployment. */
export const ENTERPRISE = {
  users: 1_000_000,
  clients: 100_000,
  /** Live user tokens (a refresh token and its access token per sign-in) and clients' own tokens. */
  userAccessTokens: 2_500_000,
  clientAccessTokens: 2_500_000,
  refreshTokens: 5_000_000,
  auditEvents: 1_000_000,
};

export type FillCounts = typeof ENTERPRISE;

/** The counts at a fraction of the full size (`--scale-fraction`, for a trial of the bench itself). */
export const scaled = (fraction: number): FillCounts =>
  Object.fromEntries(Object.entries(ENTERPRISE).map(([k, v]) => [k, Math.max(1, Math.round(v * fraction))])) as FillCounts;

const FIRST = [
  'olivia',
  'liam',
  'emma',
  'noah',
  'amelia',
  'oliver',
  'sofia',
  'elijah',
  'mia',
  'lucas',
  'aiko',
  'mateo',
  'zara',
  'ravi',
  'ines',
  'kofi',
];
const LAST = [
  'garcia',
  'smith',
  'nguyen',
  'muller',
  'rossi',
  'kowalski',
  'tanaka',
  'okafor',
  'silva',
  'johansson',
  'haddad',
  'petrov',
  'dubois',
  'kim',
  'patel',
  'moreau',
  'novak',
];
const APPS = ['payroll', 'wiki', 'crm', 'ledger', 'helpdesk', 'intranet', 'billing', 'portal', 'analytics', 'inventory', 'travel'];

/** `words[expr mod n]`, as a CASE both databases read. */
const pick = (words: string[], expr: string) =>
  `(case (${expr}) % ${words.length} ${words.map((w, n) => `when ${n} then '${w}'`).join(' ')} end)`;
/** The capitalised form of the same pick. */
const Pick = (words: string[], expr: string) =>
  pick(
    words.map((w) => w[0]!.toUpperCase() + w.slice(1)),
    expr,
  );

const DAY = 86_400_000;
/** Rows per statement: one transaction each, so SQLite's WAL and PostgreSQL's stay a bounded size. */
const CHUNK = 500_000;

interface Copy {
  table: string;
  /** The template row, as a WHERE condition on `tpl`. */
  template: string;
  count: number;
  /** Column → SQL expression over `i` (0 … count-1) and `tpl`; null: left to the column's default. */
  set(f: FillSql): Record<string, string | null>;
}

/**
 * Copies each template row `count` times straight into the database, before the server starts: the
 * columns the server fills per row (ids, names, hashes, times, the user and client a token belongs
 * to) from the row number, every other column as the server wrote it in the template. The n-th user
 * and client have ids derived from n, so a token names a real user and a real client with no lookup.
 */
function fillPlan(t: Templates, n: FillCounts, now: number): Copy[] {
  const userOf = (f: FillSql, i: string) => f.uuid(`'u' || ((${i}) % ${n.users})`);
  const clientOf = (f: FillSql, i: string) => f.uuid(`'c' || ((${i}) % ${n.clients})`);
  const name = `${pick(FIRST, 'i')} || '.' || ${pick(LAST, `i / ${FIRST.length}`)} || i`;
  // Users and clients joined over three years, in creation order (the admin lists' order).
  const joined = (count: number) => `${now - 3 * 365 * DAY} + i * ${Math.floor((3 * 365 * DAY) / count)}`;
  return [
    {
      table: 'users',
      template: `tpl.id = '${t.userId}'`,
      count: n.users,
      set: (f) => ({
        id: userOf(f, 'i'),
        external_id: userOf(f, 'i'),
        username: name,
        username_key: name,
        email: `${name} || '@example.com'`,
        display_name: `${Pick(FIRST, 'i')} || ' ' || ${Pick(LAST, `i / ${FIRST.length}`)}`,
        created_at: joined(n.users),
        updated_at: joined(n.users),
      }),
    },
    {
      table: 'clients',
      template: `tpl.client_id = '${t.clientId}'`,
      count: n.clients,
      set: (f) => ({
        client_id: clientOf(f, 'i'),
        name: `${Pick(APPS, 'i')} || ' ' || i`,
        secret_hash: f.hash(`'cs' || i`),
        redirect_uris: `'["https://app' || i || '.example.com/callback"]'`,
        created_at: joined(n.clients),
        updated_at: joined(n.clients),
      }),
    },
    {
      table: 'client_web_origins',
      template: `tpl.client_id = '${t.clientId}'`,
      count: n.clients,
      set: (f) => ({ client_id: clientOf(f, 'i'), origin: `'https://app' || i || '.example.com'` }),
    },
    // Refresh token i and user access token i are one sign-in: the same family, user and client.
    // Issued over the refresh TTL (the template's) up to now; the oldest expire a day after the fill.
    {
      table: 'refresh_tokens',
      template: `tpl.user_id = '${t.userId}'`,
      count: n.refreshTokens,
      set: (f) => ({
        token_hash: f.hash(`'r' || i`),
        family_id: f.uuid(`'f' || i`),
        user_id: userOf(f, 'i'),
        client_id: clientOf(f, 'i'),
        created_at: `${now} - (i * 7919) % (tpl.expires_at - tpl.created_at - ${DAY})`,
        auth_time: `${now} - (i * 7919) % (tpl.expires_at - tpl.created_at - ${DAY})`,
        expires_at: `${now} - (i * 7919) % (tpl.expires_at - tpl.created_at - ${DAY}) + (tpl.expires_at - tpl.created_at)`,
      }),
    },
    // Access tokens: issued in the last hour, alive three hours, so none expires (and none is purged)
    // while the bench runs.
    {
      table: 'access_tokens',
      template: `tpl.user_id = '${t.userId}'`,
      count: n.userAccessTokens,
      set: (f) => ({
        token_hash: f.hash(`'a' || i`),
        family_id: `case when tpl.family_id is null then null else ${f.uuid(`'f' || i`)} end`,
        user_id: userOf(f, 'i'),
        client_id: clientOf(f, 'i'),
        created_at: `${now} - (i * 7919) % 3600000`,
        expires_at: `${now} - (i * 7919) % 3600000 + 10800000`,
      }),
    },
    {
      table: 'access_tokens',
      template: `tpl.client_id = '${t.clientId}' and tpl.user_id is null`,
      count: n.clientAccessTokens,
      set: (f) => ({
        token_hash: f.hash(`'ac' || i`),
        client_id: clientOf(f, 'i'),
        created_at: `${now} - (i * 7919) % 3600000`,
        expires_at: `${now} - (i * 7919) % 3600000 + 10800000`,
      }),
    },
  ];
}

/** The audit trail: the template's events in turn, over the 89 days before the fill (inside the 90 kept). */
async function auditCopies(f: FillSql, count: number, n: FillCounts, now: number): Promise<void> {
  const ids = (await f.rows('select id from audit_events order by id')).map((r) => Number(r.id));
  if (ids.length === 0) throw new Error('the template wrote no audit events');
  const tplId = `case i % ${ids.length} ${ids.map((id, k) => `when ${k} then ${id}`).join(' ')} end`;
  const columns = (await f.rows(`select * from audit_events where id = ${ids[0]}`)).flatMap((r) => Object.keys(r));
  const set: Record<string, string | null> = {
    id: null,
    txid: null,
    at: `${now - 89 * DAY} + i * ${Math.floor((89 * DAY) / count)}`,
    user_id: `case when tpl.user_id is null then null else ${f.uuid(`'u' || (i % ${n.users})`)} end`,
    client_id: `case when tpl.client_id is null then null else ${f.uuid(`'c' || (i % ${n.clients})`)} end`,
  };
  for (let from = 0; from < count; from += CHUNK) {
    const to = Math.min(count, from + CHUNK) - 1;
    const s = f.series(from, to);
    const cols = columns.filter((c) => set[c] !== null);
    await f.run(
      `insert into audit_events (${cols.join(', ')}) ${s.with} select ${cols.map((c) => set[c] ?? `tpl.${c}`).join(', ')} from ${s.from} join audit_events tpl on tpl.id = ${tplId}`,
    );
  }
}

/** Runs the plan, then the audit trail; returns seconds per table. */
export async function fill(f: FillSql, t: Templates, n: FillCounts, log: (m: string) => void): Promise<Record<string, number>> {
  const now = Date.now();
  const seconds: Record<string, number> = {};
  const plan = fillPlan(t, n, now);
  const rebuild: string[] = [];
  for (const table of new Set([...plan.map((c) => c.table), 'audit_events'])) rebuild.push(...(await f.dropIndexes(table)));
  for (const copy of plan) {
    const t0 = performance.now();
    const [tpl] = await f.rows(`select * from ${copy.table} tpl where ${copy.template} limit 1`);
    if (!tpl) throw new Error(`no template row in ${copy.table} where ${copy.template}`);
    const set = copy.set(f);
    const cols = Object.keys(tpl).filter((c) => set[c] !== null);
    const select = cols.map((c) => set[c] ?? `tpl.${c}`).join(', ');
    for (let from = 0; from < copy.count; from += CHUNK) {
      const s = f.series(from, Math.min(copy.count, from + CHUNK) - 1);
      await f.run(
        `insert into ${copy.table} (${cols.join(', ')}) ${s.with} select ${select} from ${s.from}, (select * from ${copy.table} tpl where ${copy.template} limit 1) tpl`,
      );
    }
    seconds[copy.table] = (seconds[copy.table] ?? 0) + (performance.now() - t0) / 1000;
    log(`  ${copy.table}: ${copy.count.toLocaleString('en-US')} rows, ${seconds[copy.table]!.toFixed(0)} s so far`);
  }
  const t0 = performance.now();
  await auditCopies(f, n.auditEvents, n, now);
  seconds.audit_events = (performance.now() - t0) / 1000;
  log(`  audit_events: ${n.auditEvents.toLocaleString('en-US')} rows, ${seconds.audit_events.toFixed(0)} s`);
  const t1 = performance.now();
  for (const statement of rebuild) await f.run(statement);
  seconds.indexes = (performance.now() - t1) / 1000;
  log(`  ${rebuild.length} indexes made again: ${seconds.indexes.toFixed(0)} s`);
  return seconds;
}
