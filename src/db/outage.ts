import type { Logger } from 'pino';
import type { Database } from './database.ts';

/** Socket-level failures: the database server is not there (or went away mid-query). */
const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** PostgreSQL: connection exceptions (08…), shutting down or starting up (57P0…), disk full, too many connections. */
const pgCodes = /^(08...|57P0[1-4]|53100|53300)$/;
/** SQLite: the file is locked past busy_timeout, unreadable, or the disk failed. */
const sqliteCodes = /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL|READONLY|PROTOCOL)/;
/**
 * Failures of writes while reads still work: the disk is full (SQLite `SQLITE_FULL`, PostgreSQL
 * `53100`), the file became read-only, or writing it failed. Only a write that succeeds ends them.
 */
const writeCodes = /^(SQLITE_FULL|SQLITE_READONLY|SQLITE_IOERR_(WRITE|FSYNC|DIR_FSYNC|TRUNCATE|SHMSIZE)|53100)$/;
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

/** How often, while writes fail, a probe write checks whether they work again. */
const PROBE_EVERY_MS = 2000;

const codeOf = (err: unknown): string => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
};

/**
 * One log line per outage (docs/decisions.md), not a stack trace per request: the first failure of an outage is
 * logged, later ones are counted, and its end logs the recovery.
 *
 * An outage ends at the first query that succeeds, unless writes were failing (a full disk): reads
 * still work then, and ending it at each read started a new outage at each write (486 lines in 45 s
 * on a full disk). Such an outage ends only when a probe write succeeds, tried every 2 s and at each
 * `/readyz` (`checkWrites`), so that /readyz stays 503 while writes fail.
 */
export class DatabaseOutage {
  private since: number | undefined;
  private failures = 0;
  private writesFailing = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private probing: Promise<boolean> | undefined;

  constructor(
    private readonly database: Database,
    private readonly logger: Logger,
    private readonly probeWrite: () => Promise<void>,
  ) {
    database.knex.on('query-response', () => this.readSucceeded());
  }

  private readSucceeded(): void {
    if (!this.writesFailing) this.recovered();
  }

  private recovered(): void {
    if (this.since === undefined) return;
    const writes = this.writesFailing;
    this.writesFailing = false;
    if (writes) this.database.checkpoints?.resume();
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.logger.warn(
      { downForMs: Date.now() - this.since, failedRequests: this.failures },
      writes ? 'database accepts writes again' : 'database reachable again',
    );
    this.since = undefined;
    this.failures = 0;
  }

  /** Notes a failure that `isDatabaseUnavailable` recognised. */
  report(err: unknown, requestId?: string): void {
    this.failures++;
    const writes = writeCodes.test(codeOf(err));
    if (writes && !this.writesFailing) {
      this.writesFailing = true;
      this.database.checkpoints?.pause();
      this.probeTimer = setInterval(() => void this.checkWrites().catch(() => undefined), PROBE_EVERY_MS).unref();
    }
    if (this.since !== undefined) return;
    this.since = Date.now();
    // The hot paths run outside knex: their first success ends the outage as well.
    this.database.fast.onNextSuccess(() => this.readSucceeded());
    const e = err as { code?: string; message?: string };
    const what = writes
      ? 'database refuses writes (disk full?): answering 503 to what writes until a write succeeds'
      : 'database unreachable: answering 503 until it is back';
    this.logger.error({ code: e.code, reason: e.message, requestId }, what);
  }

  /**
   * For `/readyz`: throws while writes fail (a probe write, one at a time, decides); resolves at once
   * when no write has failed.
   */
  async checkWrites(): Promise<void> {
    if (!this.writesFailing) return;
    this.probing ??= this.probeWrite()
      .then(
        () => true,
        () => false,
      )
      .finally(() => (this.probing = undefined));
    if (await this.probing) this.recovered();
    else throw new Error('the database refuses writes');
  }

  /** At shutdown: no more probes. */
  stop(): void {
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
  }
}
