import type { Knex } from 'knex';

/**
 * Browser apps (docs/connect-an-application.md): `clients.web_origins` is what the operator set (null: never set, so the
 * origins of the redirect URIs). `client_web_origins` holds each client's effective origins, kept by
 * every client write, so a CORS preflight, which names no client, is one indexed lookup in any process.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('clients', (t) => {
    t.text('web_origins').nullable();
  });
  await knex.schema.createTable('client_web_origins', (t) => {
    t.string('client_id', 128).notNullable().references('client_id').inTable('clients').onDelete('CASCADE');
    t.string('origin', 300).notNullable();
    t.primary(['client_id', 'origin']);
    t.index(['origin']);
  });
  // Existing clients get their default: the http(s) origins of their redirect URIs.
  const rows = (await knex('clients').select('client_id', 'redirect_uris')) as Array<{ client_id: string; redirect_uris: unknown }>;
  for (const row of rows) {
    const uris =
      typeof row.redirect_uris === 'string' ? (JSON.parse(row.redirect_uris) as string[]) : ((row.redirect_uris as string[] | null) ?? []);
    const origins = new Set<string>();
    for (const uri of uris) {
      try {
        const url = new URL(uri);
        if (url.protocol === 'http:' || url.protocol === 'https:') origins.add(url.origin);
      } catch {
        // A stored redirect URI was checked when written; one that does not parse has no origin.
      }
    }
    if (origins.size) await knex('client_web_origins').insert([...origins].map((origin) => ({ client_id: row.client_id, origin })));
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('client_web_origins');
  await knex.schema.alterTable('clients', (t) => {
    t.dropColumn('web_origins');
  });
}
