import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Knex } from 'knex';
import { projectRoot } from '../root.ts';
import * as m0 from '../../migrations/20261121000000_core.ts';
import * as m1 from '../../migrations/20261122000000_oidc_keys_and_token_formats.ts';
import * as m2 from '../../migrations/20261123000000_security_hardening.ts';
import * as m3 from '../../migrations/20261123010000_indexes.ts';
import * as m4 from '../../migrations/20261123020000_partial_token_indexes.ts';
import * as m5 from '../../migrations/20261124000000_retention.ts';
import * as m6 from '../../migrations/20261125000000_mfa.ts';
import * as m7 from '../../migrations/20261126000000_session_ends.ts';
import * as m8 from '../../migrations/20261126010000_webauthn_challenges.ts';
import * as m9 from '../../migrations/20261126020000_throttle_in_flight.ts';
import * as m10 from '../../migrations/20261126030000_client_web_origins.ts';
import * as m11 from '../../migrations/20261126040000_client_plain_pkce.ts';
import * as m12 from '../../migrations/20261126050000_client_error_codes_audience.ts';
import * as m13 from '../../migrations/20261126060000_client_jwt_auth.ts';
import * as m14 from '../../migrations/20261126080000_backchannel_logout.ts';
import * as m15 from '../../migrations/20261126070000_device_codes.ts';
import * as m16 from '../../migrations/20261127200000_password_reset_tokens.ts';
import * as m17 from '../../migrations/20261127300000_upstream_sign_ins.ts';
import * as m18 from '../../migrations/20261127400000_saml.ts';
import * as m19 from '../../migrations/20261127500001_pg_statement_guard.ts';
import * as m20 from '../../migrations/20261128000000_saml_acs_indexes.ts';
import * as m21 from '../../migrations/20261128010000_user_email_verified.ts';
import * as m22 from '../../migrations/20261129000000_access_and_claims.ts';
import * as m23 from '../../migrations/20261130000000_directory_sync_and_scim.ts';
import * as m24 from '../../migrations/20261201000000_admin_roles.ts';
import * as webhooksAndOutbox from '../../migrations/20261201010000_webhooks_and_outbox.ts';
import * as clientKerberos from '../../migrations/20261202000000_client_kerberos.ts';
import * as durableInvitations from '../../migrations/20261203000000_durable_invitations.ts';
import * as clientVersion from '../../migrations/20261204000000_client_version.ts';
import * as listSearchIndexes from '../../migrations/20261205000000_list_search_indexes.ts';
import * as rowCounts from '../../migrations/20261206000000_row_counts.ts';
import * as clientVersionOnce from '../../migrations/20261207000000_client_version_once.ts';
import * as exactSearchIndex from '../../migrations/20261208000000_exact_search_index.ts';
import * as codeFamily from '../../migrations/20261209000000_code_family.ts';

/**
 * Every migration, imported statically so the bundle in dist/ carries them, under the names knex has
 * always recorded (the file names, `.ts` included): a database migrated by an earlier version sees
 * the same history. A new file in migrations/ goes here too (`npm test` checks it).
 */
const migrations: Record<string, Knex.Migration> = {
  '20261121000000_core.ts': m0,
  '20261122000000_oidc_keys_and_token_formats.ts': m1,
  '20261123000000_security_hardening.ts': m2,
  '20261123010000_indexes.ts': m3,
  '20261123020000_partial_token_indexes.ts': m4,
  '20261124000000_retention.ts': m5,
  '20261125000000_mfa.ts': m6,
  '20261126000000_session_ends.ts': m7,
  '20261126010000_webauthn_challenges.ts': m8,
  '20261126020000_throttle_in_flight.ts': m9,
  '20261126030000_client_web_origins.ts': m10,
  '20261126040000_client_plain_pkce.ts': m11,
  '20261126050000_client_error_codes_audience.ts': m12,
  '20261126060000_client_jwt_auth.ts': m13,
  '20261126080000_backchannel_logout.ts': m14,
  '20261126070000_device_codes.ts': m15,
  '20261127200000_password_reset_tokens.ts': m16,
  '20261127300000_upstream_sign_ins.ts': m17,
  '20261127400000_saml.ts': m18,
  '20261127500001_pg_statement_guard.ts': m19,
  '20261128000000_saml_acs_indexes.ts': m20,
  '20261128010000_user_email_verified.ts': m21,
  '20261129000000_access_and_claims.ts': m22,
  '20261130000000_directory_sync_and_scim.ts': m23,
  '20261201000000_admin_roles.ts': m24,
  '20261201010000_webhooks_and_outbox.ts': webhooksAndOutbox,
  '20261202000000_client_kerberos.ts': clientKerberos,
  '20261203000000_durable_invitations.ts': durableInvitations,
  '20261204000000_client_version.ts': clientVersion,
  '20261205000000_list_search_indexes.ts': listSearchIndexes,
  '20261206000000_row_counts.ts': rowCounts,
  '20261207000000_client_version_once.ts': clientVersionOnce,
  '20261208000000_exact_search_index.ts': exactSearchIndex,
  '20261209000000_code_family.ts': codeFamily,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};

/** The files in migrations/ that this list lacks (checked by `npm test`, where the folder is there). */
export function unlistedMigrations(): string[] {
  const dir = resolve(projectRoot, 'migrations');
  return readdirSync(dir).filter((f) => f.endsWith('.ts') && !Object.hasOwn(migrations, f));
}
