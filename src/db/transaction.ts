import { gateOf, type Db } from './connect.ts';

/**
 * Runs `work` on a connection in one transaction: it commits if `work` resolves, rolls back if it
 * throws. On SQLite the fast statements of other requests wait until it ends, so none of them can
 * slip into it on the shared connection.
 */
export function inTransaction<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  const run = () => db.transaction((trx) => work(trx));
  const gate = gateOf(db);
  return gate ? gate.hold(run) : run();
}
