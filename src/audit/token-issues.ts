import type { Logger } from 'pino';
import { clock } from '../clock.ts';
import { isDatabaseUnavailable, type DatabaseOutage } from '../db/outage.ts';
import type { AuditQueries } from './queries.ts';
import type { AuditEvent } from './model.ts';

const MINUTE_MS = 60_000;
/** How often finished minutes are written. */
const FLUSH_EVERY_MS = 10_000;
/** Compare-and-set rounds against other processes' writes before a summary is written as a row of its own. */
const MERGE_TRIES = 5;

/** A client's client_credentials issues in one minute, not yet written. */
interface Tally {
  clientId: string;
  minute: number;
  count: number;
  from: number;
  to: number;
}

/** What the summary event's details hold. */
interface Summary {
  grant: 'client_credentials';
  count: number;
  from: string;
  to: string;
}

/**
 * docs/decisions.md "Audit volume": `token.issued` of the client_credentials grant is kept as one event per client
 * and minute with its count (`details: { grant, count, from, to }`, `at` the minute's start), not one
 * per token: a service fetching a token per call wrote a row per call, burying the events about users
 * and admin changes, which stay one by one. `audit.everyToken: true` keeps one per token.
 *
 * Each process counts in memory and writes each finished minute once (every 10 s, and at shutdown).
 * Processes sharing the database add to one row: a compare-and-set on the details, so no count is lost
 * to a concurrent writer; two processes writing a new minute at the same instant may each make a row,
 * whose counts then add up.
 */
export function tokenIssueAudit(queries: AuditQueries, logger: Logger, outage: DatabaseOutage, o: { everyToken: boolean }) {
  const tallies = new Map<string, Tally>();
  let writing: Promise<void> = Promise.resolve();

  const add = (t: Tally) => {
    const key = `${t.minute} ${t.clientId}`;
    const known = tallies.get(key);
    if (!known) return void tallies.set(key, t);
    known.count += t.count;
    known.from = Math.min(known.from, t.from);
    known.to = Math.max(known.to, t.to);
  };

  async function merge(t: Tally): Promise<void> {
    const mine: Summary = {
      grant: 'client_credentials',
      count: t.count,
      from: new Date(t.from).toISOString(),
      to: new Date(t.to).toISOString(),
    };
    for (let i = 0; i < MERGE_TRIES; i++) {
      const row = await queries.findSummary(t.minute, 'token.issued', t.clientId);
      if (!row) break;
      const theirs = JSON.parse(row.details) as Summary;
      const both: Summary = {
        ...mine,
        count: theirs.count + t.count,
        // biome-ignore lint/complexity/useMathMinMax: ISO-8601 times, compared as text
        from: theirs.from < mine.from ? theirs.from : mine.from,
        // biome-ignore lint/complexity/useMathMinMax: as above
        to: theirs.to > mine.to ? theirs.to : mine.to,
      };
      if (await queries.replaceDetails(row.id, row.details, JSON.stringify(both))) return;
    }
    await queries.insert({ kind: 'token.issued', clientId: t.clientId, details: { ...mine } }, t.minute);
  }

  /** Writes the finished minutes (every minute with `all`); a tally that fails is kept for the next try. */
  function flush(all = false): Promise<void> {
    const run = async () => {
      const current = Math.floor(clock.now() / MINUTE_MS) * MINUTE_MS;
      const due = [...tallies].filter(([, t]) => all || t.minute < current);
      for (const [key] of due) tallies.delete(key);
      for (const [i, [, t]] of due.entries()) {
        try {
          await merge(t);
        } catch (err) {
          // The rest stay counted too: the database that failed this one will fail them.
          for (const [, rest] of due.slice(i)) add(rest);
          if (isDatabaseUnavailable(err)) outage.report(err);
          else logger.error({ err, clientId: t.clientId }, 'token issues not recorded in the audit trail; retrying');
          return;
        }
      }
    };
    writing = writing.then(run, run);
    return writing;
  }

  return {
    /**
     * Whether a token issue is counted in its client's summary (client_credentials, unless `everyToken`)
     * rather than kept as an event of its own, which the token service writes with the tokens.
     */
    summed(e: AuditEvent & { details: { grant: string } }): boolean {
      return e.details.grant === 'client_credentials' && !o.everyToken && !!e.clientId;
    },

    /** Counts one issue that summed() takes, once its token is committed. */
    count(e: AuditEvent): void {
      const now = clock.now();
      add({ clientId: e.clientId!, minute: Math.floor(now / MINUTE_MS) * MINUTE_MS, count: 1, from: now, to: now });
    },

    flush,

    /** Writes finished minutes every 10 s; the returned stop writes every count still held. */
    schedule(): () => Promise<void> {
      const timer = setInterval(() => void flush(), FLUSH_EVERY_MS).unref();
      return async () => {
        clearInterval(timer);
        await flush(true);
        const lost = [...tallies.values()].reduce((n, t) => n + t.count, 0);
        if (lost > 0)
          logger.warn(
            { tokens: lost, clients: tallies.size },
            'client_credentials token issues not written to the audit trail at shutdown',
          );
      };
    },
  };
}

export type TokenIssueAudit = ReturnType<typeof tokenIssueAudit>;
