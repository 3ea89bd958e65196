import { freshDatabase, type BenchDatabase } from './database.ts';
import { startLatchkey } from './latchkey.ts';
import type { BenchContext } from './measure.ts';
import { fill, type FillCounts } from './scale-fill.ts';
import { postgresFill, sqliteFill, type FillSql } from './scale-sql.ts';
import { makeTemplates } from './scale-template.ts';

export interface FilledDatabase {
  database: BenchDatabase;
  /** From the first row written to the last index updated (and on PostgreSQL, VACUUM ANALYZE done). */
  fillSeconds: number;
  secondsByTable: Record<string, number>;
}

/**
 * A fresh database at enterprise size: a first Latchkey migrates it and writes the template rows
 * (bench/scale-template.ts) and stops; the fill copies them straight into the database
 * (bench/scale-fill.ts). The measured Latchkey then starts on it as on any database it finds.
 */
export async function filledDatabase(ctx: BenchContext, counts: FillCounts): Promise<FilledDatabase> {
  const database = await freshDatabase(ctx.options.database, ctx.workDir, 'scale');
  const setup = await startLatchkey({ name: 'scale-setup', workDir: ctx.workDir, database, config: {}, log: ctx.log });
  const templates = await makeTemplates(setup);
  await setup.stop();

  ctx.log(`filling ${database.description}`);
  const f: FillSql = database.url.startsWith('sqlite:')
    ? sqliteFill(database.url.slice('sqlite:'.length))
    : await postgresFill(database.url);
  const t0 = performance.now();
  try {
    const secondsByTable = await fill(f, templates, counts, ctx.log);
    // The PostgreSQL fill runs without triggers (bench/scale-sql.ts, as pg_restore does), those that
    // keep the lists' row counts (migrations/20261206000000_row_counts.ts) among them: counted again.
    if (f.kind === 'postgres') {
      await f.run("delete from row_counts where name in ('users', 'clients')");
      await f.run("insert into row_counts (name, n) select 'users', count(*) from users union all select 'clients', count(*) from clients");
    }
    // PostgreSQL: the visibility map and statistics a long-lived database has, so that autovacuum
    // does not start on ten million new rows during the counted runs.
    if (f.kind === 'postgres') await f.run('vacuum analyze');
    const fillSeconds = (performance.now() - t0) / 1000;
    ctx.log(`  filled in ${fillSeconds.toFixed(0)} s`);
    return { database, fillSeconds, secondsByTable };
  } finally {
    await f.close();
  }
}
