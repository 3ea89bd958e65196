import { expect, test } from '@jest/globals';
import { clientQueries } from '../../src/clients/queries.ts';
import { connect, migrate } from '../../src/db/connect.ts';
import { migrationSource } from '../../src/db/migrations.ts';
import { databaseKinds, freshDatabase } from '../helpers/databases.ts';

/** A client registered before browser apps had web origins gets its default: its redirect URIs' origins. */
test.each(databaseKinds)('the web origins migration gives existing clients their default on %s', async (kind) => {
  const db = await freshDatabase(kind);
  const database = connect(db.url);
  try {
    await migrate(database);
    // Undo just this migration, as if the database came from before it. Its down() rebuilds the clients
    // table on SQLite, which the search index's view of it forbids: that later migration goes first.
    await database.knex.migrate.down({ migrationSource, name: '20261208000000_exact_search_index.ts' });
    await database.knex.migrate.down({ migrationSource, name: '20261126030000_client_web_origins.ts' });
    await database.knex('clients').insert({
      client_id: 'older-app',
      name: 'Older app',
      secret_hash: null,
      confidential: false,
      redirect_uris: JSON.stringify(['https://older.example.com/cb', 'https://older.example.com/again', 'com.example.older:/cb']),
      grant_types: '["authorization_code"]',
      scopes: '["openid"]',
      require_consent: false,
      sso_enabled: true,
      oauth_enabled: true,
      created_at: 0,
      updated_at: 0,
    });
    await migrate(database);

    const queries = clientQueries(database);
    expect((await queries.find('older-app'))?.webOrigins).toBeNull();
    expect(await queries.originRegistered('https://older.example.com')).toBe(true);
    expect(await queries.originRegistered('https://other.example.com')).toBe(false);
  } finally {
    await database.knex.destroy();
    await db.drop();
  }
});
