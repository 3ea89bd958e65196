import { freshDatabase, type BenchDatabase } from './database.ts';
import { directorySyncPhase, type DirectorySyncPhase } from './directory-sync.ts';
import { startLatchkey } from './latchkey.ts';
import type { BenchContext } from './measure.ts';
import { ADMIN_CALLERS, adminLists, type AdminList } from './scale-admin.ts';
import { filledDatabase, type FilledDatabase } from './scale-database.ts';
import { scaled, type FillCounts } from './scale-fill.ts';
import { scalePaths, type ScalePath, type ScaleServer } from './scale-paths.ts';
import { seed, signedInBrowsers } from './seed.ts';

export interface ScaleRun {
  counts: FillCounts;
  fill: FilledDatabase;
  emptyDatabase: string;
  paths: ScalePath[];
  lists: AdminList[];
  /** The filled server's start (migrations find nothing to do) and its peak RSS over the runs. */
  filledStartMs: number;
  filledPeakRssBytes: number;
  emptyPeakRssBytes: number;
  sync: DirectorySyncPhase;
}

async function seeded(ctx: BenchContext, label: string, name: string, database: BenchDatabase): Promise<ScaleServer> {
  ctx.log(`starting Latchkey on ${label}: ${database.description}`);
  const server = await startLatchkey({ name, workDir: ctx.workDir, database, config: {}, log: ctx.log });
  const s = await seed(server, ctx.options.connections);
  return { label, server, seed: s, cookies: await signedInBrowsers(server, s) };
}

/**
 * `--scale` (issue 37): the hot paths and the admin lists on an empty database and on one filled to
 * enterprise size (bench/scale-fill.ts), both servers up at once and measured path by path, then the
 * directory sync phase (bench/directory-sync.ts). The seeded users, clients and tokens of the filled
 * server are made through its interfaces after the fill: the measured rows sit among the millions.
 */
export async function scalePhase(ctx: BenchContext): Promise<ScaleRun> {
  const counts = scaled(ctx.options.scale ?? 1);
  const emptyDb = await freshDatabase(ctx.options.database, ctx.workDir, 'empty');
  const empty = await seeded(ctx, 'empty database', 'empty', emptyDb);
  const fill = await filledDatabase(ctx, counts);
  const filled = await seeded(ctx, 'filled database', 'filled', fill.database);

  const paths = await scalePaths(ctx, empty, filled);
  ctx.log(`the admin API's user and client lists, ${ADMIN_CALLERS} callers at once`);
  const lists = await adminLists(ctx, empty, filled);
  const emptyPeakRssBytes = empty.server.peakRss();
  const filledPeakRssBytes = filled.server.peakRss();
  await Promise.all([empty.server.stop(), filled.server.stop()]);

  const sync = await directorySyncPhase(ctx);
  return {
    counts,
    fill,
    emptyDatabase: emptyDb.description,
    paths,
    lists,
    filledStartMs: filled.server.startMs,
    filledPeakRssBytes,
    emptyPeakRssBytes,
    sync,
  };
}
