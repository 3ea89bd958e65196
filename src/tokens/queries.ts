import type { Database } from '../db/database.ts';
import { statement, type Statement, type Step } from '../db/statements.ts';
import { bool, json, num, numOrNull } from '../db/rows.ts';
import type { Amr } from '../login/model.ts';
import { joinedUser, joinedUserColumns } from '../users/queries.ts';
import type { AppRole, ClaimMapping } from '../access/model.ts';
import type { AuditEvent } from '../audit/model.ts';
import { insertStep } from '../audit/queries.ts';
import type { CodeRow, RefreshRow, Spend, AccessGrant } from './model.ts';

/** The columns codes and refresh tokens share, with the user joined to them. */
const grantColumns = (r: Record<string, unknown>) => ({
  clientId: String(r.client_id),
  userId: String(r.user_id),
  scope: String(r.scope),
  sessionId: (r.session_id as string | null) ?? null,
  amr: r.amr == null ? null : json<Amr[]>(r.amr, []),
  resource: (r.resource as string | null) ?? null,
  expiresAt: num(r.expires_at),
  revokedAt: numOrNull(r.revoked_at),
  user: joinedUser(r),
});

const toCode = (r: Record<string, unknown>): CodeRow => ({
  ...grantColumns(r),
  codeHash: String(r.code_hash),
  redirectUri: String(r.redirect_uri),
  nonce: (r.nonce as string | null) ?? null,
  codeChallenge: (r.code_challenge as string | null) ?? null,
  codeChallengeMethod: (r.code_challenge_method as string | null) ?? null,
  authTime: num(r.auth_time),
  sessionExpiresAt: numOrNull(r.session_expires_at),
});

const toRefresh = (r: Record<string, unknown>): RefreshRow => ({
  ...grantColumns(r),
  tokenHash: String(r.token_hash),
  familyId: String(r.family_id),
  codeHash: (r.code_hash as string | null) ?? null,
  authTime: numOrNull(r.auth_time),
  rotatedAt: numOrNull(r.rotated_at),
  clientOauthEnabled: bool(r.oauth_enabled),
});

export interface NewCode {
  code_hash: string;
  client_id: string;
  user_id: string;
  session_id: string | null;
  redirect_uri: string;
  scope: string;
  nonce: string | null;
  code_challenge: string | null;
  code_challenge_method: string | null;
  auth_time: number;
  /** JSON of the sign-in's `amr`. */
  amr: string | null;
  resource: string | null;
  expires_at: number;
  created_at: number;
}

const toAccessGrant = (r: Record<string, unknown>): AccessGrant => ({
  clientId: String(r.client_id),
  userId: r.user_id == null ? null : String(r.user_id),
  sessionId: r.session_id == null ? null : String(r.session_id),
  scopes: String(r.scope).split(' ').filter(Boolean),
  audience: (r.audience as string | null) ?? null,
  expiresAt: num(r.expires_at),
  createdAt: num(r.created_at),
  // Most clients have no application roles or claim mappings (null columns): nothing to parse then.
  client: {
    oauthEnabled: bool(r.oauth_enabled),
    roles: json(r.client_roles, []),
    scopes: json(r.client_scopes, []),
    appRoles: json<AppRole[]>(r.app_roles, []),
    claimMappings: json<ClaimMapping[]>(r.claim_mappings, []),
  },
  // A user deleted since leaves no row to join: the token then has no user either.
  user:
    r.user_id != null && r.username != null
      ? {
          id: String(r.user_id),
          backend: String(r.backend),
          username: String(r.username),
          email: (r.email as string | null) ?? null,
          emailVerified: r.email_verified == null ? true : bool(r.email_verified),
          displayName: (r.display_name as string | null) ?? null,
          groups: json(r.groups, []),
          roles: json(r.roles, []),
          attributes: json(r.attributes, {}),
          disabled: bool(r.disabled),
        }
      : null,
});

export interface NewAccessToken {
  token_hash: string;
  client_id: string;
  user_id: string | null;
  scope: string;
  family_id: string | null;
  code_hash: string | null;
  session_id: string | null;
  audience: string | null;
  expires_at: number;
  created_at: number;
}

export type NewRefreshToken = Omit<NewAccessToken, 'user_id' | 'family_id' | 'audience'> & {
  user_id: string;
  family_id: string;
  auth_time: number | null;
  amr: string | null;
  resource: string | null;
};

const ACCESS_COLUMNS = [
  'token_hash',
  'client_id',
  'user_id',
  'scope',
  'family_id',
  'code_hash',
  'session_id',
  'audience',
  'expires_at',
  'created_at',
] as const;
/** The columns a refresh token and a code both end with: the sign-in's time and factors, the audience, the times. */
const GRANT_TAIL = ['auth_time', 'amr', 'resource', 'expires_at', 'created_at'] as const;
const REFRESH_COLUMNS = ['token_hash', 'family_id', 'client_id', 'user_id', 'scope', 'session_id', 'code_hash', ...GRANT_TAIL] as const;
const CODE_COLUMNS = [
  'code_hash',
  'client_id',
  'user_id',
  'session_id',
  'redirect_uri',
  'scope',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  ...GRANT_TAIL,
] as const;

const insertSql = (table: string, columns: readonly string[]) =>
  statement(`insert into ${table} (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`);

const findAccessSql = `select a.client_id, a.user_id, a.session_id, a.scope, a.audience, a.expires_at, a.created_at,
  c.oauth_enabled, c.roles as client_roles, c.scopes as client_scopes, c.app_roles, c.claim_mappings,
  u.backend, u.username, u.email, u.email_verified, u.display_name, u.groups, u.roles, u.attributes, u.disabled
from access_tokens a join clients c on c.client_id = a.client_id left join users u on u.id = a.user_id
where a.token_hash = ?`;

const sql = {
  insertCode: insertSql('auth_codes', CODE_COLUMNS),
  /** The code with its session's expiry and its user, in one read: a code stands only while its session does. */
  findCode: statement(
    `select c.*, s.expires_at as session_expires_at, ${joinedUserColumns('u')}
from auth_codes c left join sso_sessions s on s.id_hash = c.session_id left join users u on u.id = c.user_id
where c.code_hash = ?`,
  ),
  /**
   * Marks a code used: alone for a failed exchange, or as the guard of its tokens' issue. A refused
   * code is not spent: an exchange that read it just before it was refused issues nothing.
   */
  spendCode: statement(
    'update auth_codes set consumed_at = ?, family_id = ? where code_hash = ? and consumed_at is null and revoked_at is null',
  ),
  /** The family of the tokens a spent code issued: what its replay revokes. */
  codeFamily: statement('select family_id from auth_codes where code_hash = ?'),
  spendRefresh: statement('update refresh_tokens set rotated_at = ? where token_hash = ? and rotated_at is null and revoked_at is null'),
  insertAccess: insertSql('access_tokens', ACCESS_COLUMNS),
  /**
   * The access token, only while its client's row has the version of the copy the request ran on
   * (`insertTokens`'s `clientAt`): the version is checked in the insert instead of read before it.
   * Typed casts: PostgreSQL reads a bare parameter of a select as text.
   */
  insertAccessIfClient: statement(
    `insert into access_tokens (${ACCESS_COLUMNS.join(', ')}) select ${ACCESS_COLUMNS.map((c) =>
      c === 'expires_at' || c === 'created_at' ? 'cast(? as bigint)' : 'cast(? as text)',
    ).join(', ')} where exists (select 1 from clients where client_id = ? and version = ?)`,
  ),
  insertRefresh: insertSql('refresh_tokens', REFRESH_COLUMNS),
  /** The refresh token with the state of its client and its user, in one indexed read. */
  findRefresh: statement(`select r.*, c.oauth_enabled, ${joinedUserColumns('u')}
from refresh_tokens r join clients c on c.client_id = r.client_id left join users u on u.id = r.user_id
where r.token_hash = ?`),
  findAccess: statement(findAccessSql),
  /**
   * The same read, with the version of the client asking (introspection's caller, src/oauth/client-endpoint.ts
   * `checksClientVersion`) in the same statement; no row when the token is unknown (then `askerVersion`
   * reads the version alone). A derived table giving one row either way cost SQLite more than two reads.
   */
  findAccessAsked: statement(
    findAccessSql.replace(/^select /, 'select (select version from clients where client_id = ?) as asker_version, '),
  ),
  askerVersion: statement('select version from clients where client_id = ?'),
};

/** The columns both token tables can be revoked by (family, code, session, user, client, the token itself). */
const REVOKE_BY = new Set(['token_hash', 'family_id', 'code_hash', 'session_id', 'user_id', 'client_id']);
const revokeStatements = new Map<string, { access: Statement; refresh: Statement }>();

/** The pair of statements that revoke by these columns, made once per set of columns. */
function revokeSql(columns: string[]): { access: Statement; refresh: Statement } {
  const key = columns.join(',');
  let pair = revokeStatements.get(key);
  if (!pair) {
    for (const c of columns) if (!REVOKE_BY.has(c)) throw new Error(`cannot revoke tokens by ${c}`);
    const where = columns.map((c) => `${c} = ?`).join(' and ');
    pair = {
      access: statement(`delete from access_tokens where ${where}`),
      refresh: statement(`update refresh_tokens set revoked_at = ? where ${where} and revoked_at is null`),
    };
    revokeStatements.set(key, pair);
  }
  return pair;
}

const values = <T extends object>(row: T, columns: readonly (keyof T)[]): unknown[] => columns.map((c) => row[c] ?? null);

export const tokenQueries = ({ knex: db, fast }: Database) => {
  return {
    async insertCode(row: NewCode): Promise<void> {
      await fast.groupCommit([{ stmt: sql.insertCode, params: values(row, CODE_COLUMNS) }]);
    },

    async codeFamily(codeHash: string): Promise<string | null> {
      const row = await fast.get<{ family_id: string | null }>(sql.codeFamily, [codeHash]);
      return row?.family_id ?? null;
    },

    async findCode(codeHash: string): Promise<{ row: CodeRow; consumed: boolean } | undefined> {
      const row = await fast.get(sql.findCode, [codeHash]);
      return row ? { row: toCode(row), consumed: row.consumed_at != null } : undefined;
    },

    /** Marks a code used without issuing anything (a failed exchange still uses the code up). */
    async useUpCode(codeHash: string, now: number): Promise<void> {
      await fast.run(sql.spendCode, [now, null, codeHash]);
    },

    /**
     * Inserts new tokens; with `spend`, in one transaction with spending what they are issued for (a
     * code, or the refresh token they replace). The spend comes first and takes the row's lock, so a
     * concurrent replay waits until these tokens are committed and then revokes them (docs/decisions.md). False,
     * with nothing written, when the code or token was already spent: a replay. `event`, the issue's
     * audit event, is written in the same transaction.
     */
    async insertTokens(
      access: NewAccessToken,
      refresh: NewRefreshToken | undefined,
      spend: Spend | undefined,
      now: number,
      event?: AuditEvent,
      /** The client's version as the request found it, checked by the access token's insert (false when it differs). */
      clientAt?: { clientId: string; version: number },
    ): Promise<boolean> {
      const steps: Step[] = [];
      if (spend) {
        steps.push(
          'code' in spend
            ? { stmt: sql.spendCode, params: [now, access.family_id, spend.code], expectRows: 1 }
            : { stmt: sql.spendRefresh, params: [now, spend.refresh], expectRows: 1 },
        );
      }
      steps.push(
        clientAt
          ? {
              stmt: sql.insertAccessIfClient,
              params: [...values(access, ACCESS_COLUMNS), clientAt.clientId, clientAt.version],
              expectRows: 1,
            }
          : { stmt: sql.insertAccess, params: values(access, ACCESS_COLUMNS) },
      );
      if (refresh) steps.push({ stmt: sql.insertRefresh, params: values(refresh, REFRESH_COLUMNS) });
      // The audit event commits with the tokens: one job, one commit wait (issue 37).
      if (event) steps.push(insertStep(event, now));
      return (await fast.groupCommit(steps)) !== null;
    },

    async findRefresh(tokenHash: string): Promise<RefreshRow | undefined> {
      const row = await fast.get(sql.findRefresh, [tokenHash]);
      return row ? toRefresh(row) : undefined;
    },

    /** The access token with what `/me`, userinfo and introspection need of its user and client, in one indexed read. */
    async findAccess(tokenHash: string): Promise<AccessGrant | undefined> {
      const row = await fast.get(sql.findAccess, [tokenHash]);
      return row ? toAccessGrant(row) : undefined;
    },

    /** `findAccess`, with the version of the client `askerId` as it is now (undefined when it is gone), in the same read. */
    async findAccessAsked(
      tokenHash: string,
      askerId: string,
    ): Promise<{ grant: AccessGrant | undefined; askerVersion: number | undefined }> {
      const row = await fast.get(sql.findAccessAsked, [askerId, tokenHash]);
      if (row) return { grant: toAccessGrant(row), askerVersion: row.asker_version == null ? undefined : Number(row.asker_version) };
      // An unknown token: the asker's version read alone.
      const asker = await fast.get(sql.askerVersion, [askerId]);
      return { grant: undefined, askerVersion: asker ? Number(asker.version) : undefined };
    },

    /**
     * Refuses the unredeemed codes of a user, a session or a client (docs/decisions.md: sessions end with the
     * credentials); the exchange of one answers `invalid_grant`. How many it refused.
     */
    async refuseCodes(where: { user_id?: string; session_id?: string; client_id?: string }, now: number): Promise<number> {
      return db('auth_codes').where(where).whereNull('consumed_at').whereNull('revoked_at').update({ revoked_at: now });
    },

    /** Revokes by columns of both token tables, in one transaction; how many tokens it stopped. */
    async revokeWhere(where: Record<string, string>, now: number): Promise<number> {
      const columns = Object.keys(where).sort();
      const params = columns.map((c) => where[c]);
      const { access, refresh } = revokeSql(columns);
      const counts = await fast.transaction([
        { stmt: access, params },
        { stmt: refresh, params: [now, ...params] },
      ]);
      return (counts ?? []).reduce((a, b) => a + b, 0);
    },
  };
};

export type TokenQueries = ReturnType<typeof tokenQueries>;
