import { closeSync, openSync, readSync, realpathSync } from 'node:fs';
import { endianness } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';

/**
 * SQLite's WAL checkpoint on a thread of its own. A checkpoint copies the pages committed to the WAL
 * back into the database file and fsyncs both files. Run by SQLite itself after a commit (the
 * default), it ran on the event loop: under load, every third of a second it stopped every request
 * for about 10 ms of fsyncs, and copying the pages took an eighth of the event loop's time on the
 * code flow (issue 37, docs/performance.md). Here a second connection, on a worker thread, looks
 * every `intervalMs` and runs a PASSIVE checkpoint once `pages` frames wait to be copied (SQLite's
 * own mark is 1,000): PASSIVE never waits for the writer or a reader, nor makes them wait, so the
 * event loop carries on committing meanwhile.
 *
 * The server's own connection keeps SQLite's automatic checkpoint as a fallback, at a higher mark
 * (`FALLBACK_PAGES`): SQLite starts the WAL file over only when a checkpoint has copied all of it, which
 * a worker chasing a writer that never pauses seldom does, and while the worker fails the WAL is still
 * bounded. That fallback then finds most pages already copied. A thread that ends unasked gives the
 * connection SQLite's own mark back.
 */
export const FALLBACK_PAGES = 10_000;

/** SQLite's own mark, which the server's connection goes back to when the thread ends before it is stopped. */
const SQLITE_DEFAULT_PAGES = 1000;

/** The worker's code, CommonJS run by `eval`: the server is bundled into one file, and this needs no file of its own. */
const WORKER = `
const { readSync } = require('node:fs');
const { endianness } = require('node:os');
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.library);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
// A checkpoint fsyncs the WAL before it copies and the database file after: said here rather than
// left to the build's default (with OFF it would skip both).
db.pragma('synchronous = NORMAL');
db.pragma('cache_size = -64');
// The frames committed and not yet copied, read from the WAL index's header in the -shm file
// (https://www.sqlite.org/walformat.html: mxFrame at byte 16, nBackfill at byte 96, in the machine's
// byte order): a tick with less than a checkpoint's worth to copy costs one read, and no fsync. A
// read racing SQLite's update of the header gives a count off by a tick, or negative: no harm. The
// descriptor is the server thread's (see startCheckpointer).
const header = Buffer.alloc(100);
const u32 = endianness() === 'LE' ? (at) => header.readUInt32LE(at) : (at) => header.readUInt32BE(at);
const pending = () => (readSync(workerData.shm, header, 0, 100, 0) < 100 ? 0 : u32(16) - u32(96));
// The thread tells the server only when checkpoints start failing and when they work again (a full
// disk fails every one of them).
let failing = false;
let paused = false;
const tick = () => {
  try {
    if (paused || pending() < workerData.pages) return;
    db.pragma('wal_checkpoint(PASSIVE)');
    if (failing) parentPort.postMessage({ ok: true });
    failing = false;
  } catch (err) {
    if (!failing) parentPort.postMessage({ ok: false, code: err && err.code, error: String(err && err.message) });
    failing = true;
  }
};
const timer = setInterval(tick, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'pause' || m === 'resume') paused = m === 'pause';
  if (m !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** What the thread needs of the server's connection (src/db/fast-sqlite.ts). */
interface ServerConnection {
  pragma(sql: string): unknown;
  prepare(sql: string): { get(...p: unknown[]): unknown };
}

export interface Checkpoints {
  /**
   * While writes fail (a full disk: src/db/outage.ts), no checkpoint: one that completed would let the
   * next write start the WAL over in the space it already holds, and succeed, so that the outage
   * would end and start again with every write. Only the probe write, once space is freed, ends it.
   */
  pause(): void;
  resume(): void;
  /**
   * The frames committed and not yet copied into the database file, read as the thread reads them
   * (one 100-byte read of the -shm file). The retention purge waits on it: its deletes write pages
   * faster than the thread copies them, and a WAL that reached the fallback mark would be copied on
   * the event loop, stopping every request for tens of milliseconds.
   */
  backlog(): number;
  /** The backlog above which the thread copies (SQLite's own mark). */
  readonly pages: number;
  /**
   * Ends the thread (its connection closed), then closes the server's connection with
   * `closeConnection`, then the descriptor of the -shm file: closing any descriptor of a file drops
   * every POSIX lock the process holds on it, the server connection's included, and another process
   * (a backup, the CLI) could then reset the WAL index under a running server.
   */
  close(closeConnection: () => void): Promise<void>;
}

export function startCheckpointer(o: {
  conn: ServerConnection;
  file: string;
  library: string;
  intervalMs: number;
  pages: number;
  logger?: Logger;
}): Checkpoints {
  // A first read in WAL mode makes the -shm file (a fresh database has none until then). SQLite puts it
  // beside the file a symbolic link points to.
  o.conn.prepare('select count(*) from sqlite_master').get();
  const shm = openSync(`${realpathSync(o.file)}-shm`, 'r');
  o.conn.pragma(`wal_autocheckpoint = ${FALLBACK_PAGES}`);
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { file: o.file, library: o.library, intervalMs: o.intervalMs, pages: o.pages, shm },
    // A checkpoint allocates next to nothing in JavaScript: a small heap keeps the thread's memory small.
    resourceLimits: { maxOldGenerationSizeMb: 12, maxYoungGenerationSizeMb: 1 },
  });
  // It never keeps the process alive: a process that exits without closing the database loses no
  // data (the WAL is read back at the next open); only the copy into the database file waits.
  worker.unref();
  // A full disk is the writes' to report (src/db/outage.ts: one line when writes fail, one when they
  // work again); the checkpoint, which only waits meanwhile, says so at debug.
  let level: 'warn' | 'debug' = 'warn';
  worker.on('message', (m: { ok: boolean; code?: string; error?: string }) => {
    if (m.ok) return o.logger?.[level === 'warn' ? 'info' : 'debug']('background WAL checkpoints work again');
    level = m.code === 'SQLITE_FULL' ? 'debug' : 'warn';
    o.logger?.[level]({ err: m.error, code: m.code }, 'background WAL checkpoint failed; SQLite checkpoints on the event loop meanwhile');
  });
  let stopping = false;
  worker.on('error', (err) => o.logger?.error({ err }, 'background WAL checkpointer failed'));
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      // Ended unasked: SQLite checkpoints after commits again, at its own mark, as it did without the thread.
      if (!stopping) {
        o.conn.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);
        o.logger?.error('background WAL checkpointer ended; SQLite checkpoints on the event loop');
      }
      resolve();
    }),
  );
  const header = Buffer.alloc(100);
  const u32 = endianness() === 'LE' ? (at: number) => header.readUInt32LE(at) : (at: number) => header.readUInt32BE(at);
  let closed = false;
  return {
    pause: () => worker.postMessage('pause'),
    resume: () => worker.postMessage('resume'),
    backlog: () => (closed || readSync(shm, header, 0, 100, 0) < 100 ? 0 : Math.max(0, u32(16) - u32(96))),
    pages: o.pages,
    async close(closeConnection) {
      stopping = true;
      worker.postMessage('stop');
      // The worker closes its connection between two checkpoints; it is ended outright if it does not.
      const timeout = setTimeout(() => {
        o.logger?.warn('background WAL checkpointer did not stop within 5 s: ended');
        void worker.terminate();
      }, 5_000);
      await exited;
      clearTimeout(timeout);
      closeConnection();
      closed = true;
      closeSync(shm);
    },
  };
}
