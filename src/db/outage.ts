import type { Logger } from 'pino';
import type { Db } from './connect.ts';
import { fastOf } from './fast.ts';

/** Socket-level failures: the database server is not there (or went away mid-query). */
const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** PostgreSQL: connection exceptions (08…), shutting down or starting up (57P0…), too many connections. */
const pgCodes = /^(08...|57P0[1-4]|53300)$/;
/** SQLite: the file is locked past busy_timeout, unreadable, or the disk failed. */
const sqliteCodes = /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL|READONLY|PROTOCOL)/;
const messages = /Connection terminated|Connection ended|connection error|not queryable|Timeout acquiring a connection/i;

/** Whether an error means the database cannot be reached right now, as opposed to a bug or bad input. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; name?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (networkCodes.has(code) || pgCodes.test(code) || sqliteCodes.test(code)) return true;
  if (e.name === 'KnexTimeoutError') return true;
  return typeof e.message === 'string' && messages.test(e.message);
}

/**
 * One log line per outage (SPEC 7), not a stack trace per request: the first failure of an outage is
 * logged, later ones are counted, and the first successful query afterwards logs the recovery.
 */
export class DatabaseOutage {
  private since: number | undefined;
  private failures = 0;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {
    db.on('query-response', () => this.recovered());
  }

  private recovered(): void {
    if (this.since === undefined) return;
    this.logger.warn({ downForMs: Date.now() - this.since, failedRequests: this.failures }, 'database reachable again');
    this.since = undefined;
    this.failures = 0;
  }

  /** Notes a failure that `isDatabaseUnavailable` recognised. */
  report(err: unknown, requestId?: string): void {
    this.failures++;
    if (this.since !== undefined) return;
    this.since = Date.now();
    // The hot paths run outside knex: their first success ends the outage as well.
    fastOf(this.db).onNextSuccess(() => this.recovered());
    const e = err as { code?: string; message?: string };
    this.logger.error({ code: e.code, reason: e.message, requestId }, 'database unreachable: answering 503 until it is back');
  }
}
