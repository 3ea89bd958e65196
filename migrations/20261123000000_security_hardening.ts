import type { Knex } from 'knex';

/**
 * Security hardening:
 * - The brute-force table is keyed by a keyed hash of the account name (never the typed text, which
 *   may be a password typed into the wrong field). Old rows, keyed by the typed name in clear, go.
 * - The built-in `admin-cli` gets the `admin` scope (docs/admin-api.md): a user's token reaches the admin API
 *   only when issued for it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.dropTable('login_throttle');
  await knex.schema.createTable('login_throttle', (t) => {
    // `u:` + HMAC of the account name, `d:` + a device cookie's id, `a:` + an address.
    t.string('key', 96).primary();
    t.integer('failures').notNullable();
    t.bigInteger('window_start').notNullable();
    t.bigInteger('blocked_until').notNullable();
  });

  const cli = await knex('clients').where({ client_id: 'admin-cli' }).first('scopes');
  if (cli) {
    const scopes = JSON.parse(String(cli.scopes)) as string[];
    if (!scopes.includes('admin'))
      await knex('clients')
        .where({ client_id: 'admin-cli' })
        .update({ scopes: JSON.stringify([...scopes, 'admin']) });
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('login_throttle');
  await knex.schema.createTable('login_throttle', (t) => {
    t.string('key', 320).primary();
    t.integer('failures').notNullable();
    t.bigInteger('window_start').notNullable();
    t.bigInteger('blocked_until').notNullable();
  });
  const cli = await knex('clients').where({ client_id: 'admin-cli' }).first('scopes');
  if (cli) {
    const scopes = (JSON.parse(String(cli.scopes)) as string[]).filter((s) => s !== 'admin');
    await knex('clients')
      .where({ client_id: 'admin-cli' })
      .update({ scopes: JSON.stringify(scopes) });
  }
}
