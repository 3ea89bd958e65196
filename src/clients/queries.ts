import type { Knex } from 'knex';
import type { Database } from '../db/database.ts';
import { statement, type FastDb } from '../db/statements.ts';
import { likePattern, paginate, type Page, type PageRequest } from '../db/pagination.ts';
import { rowCount } from '../db/row-counts.ts';
import { searchPage, type SearchedList } from '../db/text-search.ts';
import { bool, json, num, numOrNull } from '../db/rows.ts';
import type { IdTokenAlg, AccessTokenFormat, AuthMethod, Client } from './model.ts';
import { EVERYONE, type AccessPolicy, type AppRole, type ClaimMapping } from '../access/model.ts';
import { ownerPattern } from '../admin-roles/model.ts';

type Row = Record<string, unknown>;

function toClient(r: Row): Client {
  return {
    clientId: String(r.client_id),
    name: String(r.name),
    secretHash: (r.secret_hash as string | null) ?? null,
    confidential: bool(r.confidential),
    redirectUris: json(r.redirect_uris, []),
    postLogoutRedirectUris: json(r.post_logout_redirect_uris, []),
    grantTypes: json(r.grant_types, []),
    scopes: json(r.scopes, []),
    roles: json(r.roles, []),
    requireConsent: bool(r.require_consent),
    requireMfa: bool(r.require_mfa),
    allowPlainPkce: bool(r.allow_plain_pkce),
    kerberos: bool(r.kerberos),
    ssoEnabled: bool(r.sso_enabled),
    oauthEnabled: bool(r.oauth_enabled),
    accessTokenTtl: numOrNull(r.access_token_ttl),
    refreshTokenTtl: numOrNull(r.refresh_token_ttl),
    idTokenAlg: (r.id_token_alg as IdTokenAlg | undefined) ?? 'RS256',
    accessTokenFormat: (r.access_token_format as AccessTokenFormat | undefined) ?? 'opaque',
    webOrigins: json<string[] | null>(r.web_origins, null),
    errorCodes: r.error_codes === 'rfc6749' ? 'rfc6749' : 'maxkey',
    defaultAudience: (r.default_audience as string | null) ?? null,
    tokenEndpointAuthMethod: (r.token_endpoint_auth_method as AuthMethod | null) ?? null,
    jwks: (r.jwks as string | null) ?? null,
    jwksUri: (r.jwks_uri as string | null) ?? null,
    secretEnc: (r.secret_enc as string | null) ?? null,
    backchannelLogoutUri: (r.backchannel_logout_uri as string | null | undefined) ?? null,
    access: json<AccessPolicy>(r.access, EVERYONE),
    appRoles: json<AppRole[]>(r.app_roles, []),
    claimMappings: json<ClaimMapping[]>(r.claim_mappings, []),
    initiateLoginUri: (r.initiate_login_uri as string | null | undefined) ?? null,
    owners: json<string[]>(r.owners, []),
    createdAt: num(r.created_at),
    updatedAt: num(r.updated_at),
  };
}

function toRow(c: Client): Row {
  return {
    client_id: c.clientId,
    name: c.name,
    secret_hash: c.secretHash,
    confidential: c.confidential,
    redirect_uris: JSON.stringify(c.redirectUris),
    post_logout_redirect_uris: JSON.stringify(c.postLogoutRedirectUris),
    grant_types: JSON.stringify(c.grantTypes),
    scopes: JSON.stringify(c.scopes),
    roles: JSON.stringify(c.roles),
    require_consent: c.requireConsent,
    require_mfa: c.requireMfa,
    allow_plain_pkce: c.allowPlainPkce,
    kerberos: c.kerberos,
    sso_enabled: c.ssoEnabled,
    oauth_enabled: c.oauthEnabled,
    access_token_ttl: c.accessTokenTtl,
    refresh_token_ttl: c.refreshTokenTtl,
    id_token_alg: c.idTokenAlg,
    access_token_format: c.accessTokenFormat,
    web_origins: c.webOrigins === null ? null : JSON.stringify(c.webOrigins),
    error_codes: c.errorCodes,
    default_audience: c.defaultAudience,
    token_endpoint_auth_method: c.tokenEndpointAuthMethod,
    jwks: c.jwks,
    jwks_uri: c.jwksUri,
    secret_enc: c.secretEnc,
    backchannel_logout_uri: c.backchannelLogoutUri,
    // null for today's behaviour (everyone, no roles, no mappings): nothing to parse on the hot paths.
    access: c.access.mode === 'everyone' ? null : JSON.stringify(c.access),
    app_roles: c.appRoles.length > 0 ? JSON.stringify(c.appRoles) : null,
    claim_mappings: c.claimMappings.length > 0 ? JSON.stringify(c.claimMappings) : null,
    initiate_login_uri: c.initiateLoginUri,
    owners: c.owners.length > 0 ? JSON.stringify(c.owners) : null,
    created_at: c.createdAt,
    updated_at: c.updatedAt,
  };
}

const findSql = statement('select * from clients where client_id = ?');
const versionSql = statement('select version from clients where client_id = ?');

/** Clients kept by one process (see `find`): enough for every client of a large install to stay. */
const KEPT_CLIENTS = 10_000;
/** The kept clients of each database (a transaction's statements have their own). */
const keptBy = new WeakMap<FastDb, Map<string, { version: number; client: Client }>>();
const originSql = statement('select 1 as found from client_web_origins where origin = ? limit 1');

async function setOrigins(db: Knex, clientId: string, origins: string[]): Promise<void> {
  await db('client_web_origins').where({ client_id: clientId }).delete();
  if (origins.length) await db('client_web_origins').insert(origins.map((origin) => ({ client_id: clientId, origin })));
}

/** The clients list: registration order, searched through its trigram index (src/db/text-search.ts). */
const CLIENT_ORDER: SearchedList = { table: 'clients', index: 'clients_search', timeColumn: 'created_at', keyColumn: 'client_id' };

export const clientQueries = ({ knex: db, fast }: Database) => ({
  /**
   * A client as its row is now. Every token request authenticates its client, and reading and decoding
   * the whole row was a fifth of an introspection's time: the version is read instead (one small
   * column of the same row), and the copy this process keeps is used while it matches. Every insert
   * and every change of a row (in any process, or at the SQL prompt) gives it a version no row ever had
   * (triggers drawing on one counter: migration 20261207000000_client_version_once), so the next
   * request reads it again, and a client deleted and registered again under its id is never taken for
   * the old one; a deleted client has no version. The copies are never changed by their users (the
   * services make new objects from them).
   */
  async find(clientId: string): Promise<Client | undefined> {
    const kept = keptBy.get(fast) ?? keptBy.set(fast, new Map()).get(fast)!;
    const have = kept.get(clientId);
    if (have) {
      const now = await fast.get<{ version: number | string }>(versionSql, [clientId]);
      if (!now) return void kept.delete(clientId);
      if (Number(now.version) === have.version) return have.client;
    }
    const row = await fast.get(findSql, [clientId]);
    if (!row) return undefined;
    const client = toClient(row);
    if (kept.size >= KEPT_CLIENTS) kept.delete(kept.keys().next().value!);
    kept.set(clientId, { version: Number(row.version), client });
    return client;
  },
  /**
   * The copy this process keeps of a client and the version it was read at, without asking the
   * database whether it is still the row: for a statement that checks the version itself (a
   * `client_credentials` token's insert, introspection's read of the token: src/tokens/queries.ts),
   * where that read would be a second round trip. Undefined when none is kept.
   */
  keptCopy(clientId: string): { client: Client; version: number } | undefined {
    return keptBy.get(fast)?.get(clientId);
  },
  /** `origins`: the client's effective web origins, kept beside it for the preflight's lookup. */
  async insert(client: Client, origins: string[]): Promise<void> {
    await db.transaction(async (trx) => {
      await trx('clients').insert(toRow(client));
      await setOrigins(trx, client.clientId, origins);
    });
  },
  async update(client: Client, origins: string[]): Promise<void> {
    const { client_id, created_at, ...rest } = toRow(client);
    await db.transaction(async (trx) => {
      // The database raises the row's version (a trigger): every process's kept copy (find) is read again.
      await trx('clients').where({ client_id }).update(rest);
      await setOrigins(trx, client.clientId, origins);
    });
  },
  /**
   * Records an assertion's jti as used; false if it was already (a replay). One insert whose
   * primary key decides, so two processes racing on one assertion cannot both win.
   */
  async useAssertionJti(clientId: string, jti: string, expiresAt: number): Promise<boolean> {
    const rows = (await db('client_assertion_jtis')
      .insert({ client_id: clientId, jti, expires_at: expiresAt })
      .onConflict(['client_id', 'jti'])
      .ignore()
      .returning('jti')) as unknown[];
    return rows.length > 0;
  },
  /** Whether any client's browser app has this origin (a CORS preflight names no client). */
  async originRegistered(origin: string): Promise<boolean> {
    return (await fast.get(originSql, [origin])) !== undefined;
  },
  async remove(clientId: string): Promise<boolean> {
    return (await db('clients').where({ client_id: clientId }).delete()) > 0;
  },
  async list(): Promise<Client[]> {
    return (await db('clients').orderBy('client_id')).map(toClient);
  },
  /**
   * A page of clients in registration order, optionally those whose name or id contains `search`,
   * and only those `owner` owns (the `app-owner` role's view).
   */
  async page(req: PageRequest & { search?: string | null; owner?: string }): Promise<Page<Client>> {
    const q = db('clients').select('*');
    if (req.owner !== undefined) q.whereRaw("owners like ? escape '\\'", [ownerPattern(req.owner)]);
    if (!req.search) {
      const total = req.owner !== undefined ? undefined : () => rowCount(db, 'clients');
      return paginate(q, { ...req, ...CLIENT_ORDER, direction: 'asc', total }, toClient);
    }
    const like = likePattern(req.search);
    q.where((w) => w.whereRaw("lower(name) like ? escape '\\'", [like]).orWhereRaw("lower(client_id) like ? escape '\\'", [like]));
    // The index's count is the total only when the search is the list's one filter.
    return searchPage(db, CLIENT_ORDER, req.search, q, { ...req, countIsTotal: req.owner === undefined }, toClient);
  },
});

export type ClientQueries = ReturnType<typeof clientQueries>;
