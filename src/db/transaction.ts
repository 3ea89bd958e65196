import type { Db } from './connect.ts';

/** Runs `work` on a connection in one transaction: it commits if `work` resolves, rolls back if it throws. */
export const inTransaction = <T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> => db.transaction((trx) => work(trx));
