import { loadConfig } from '../config/load.ts';
import { connect, migrate } from '../db/connect.ts';

const config = loadConfig();
const database = connect(config.databaseUrl);
try {
  const applied = await migrate(database);
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'already up to date\n');
} finally {
  await database.knex.destroy();
}
