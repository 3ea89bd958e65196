import type { Duplex } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { Client, ResultCodeError, type Change, type Control, type SearchOptions, type SearchResult } from 'ldapts';
import type { Logger } from 'pino';
import { BackendUnavailableError, span, tracingOn } from '../../src/identity/plugin-kit.ts';
import type { ServerList } from './servers.ts';

/** The operations a pooled connection offers; each refuses to run on a connection that dropped. */
export interface LdapSession {
  readonly url: string;
  search(baseDN: string, options: SearchOptions): Promise<SearchResult>;
  bind(dn: string, password: string, controls?: Control[]): Promise<void>;
  /** An extended operation (the Password Modify of docs/identity-backends.md). */
  exop(oid: string, value: Buffer, controls?: Control[]): Promise<void>;
  modify(dn: string, changes: Change[], controls?: Control[]): Promise<void>;
  /**
   * A paged search (RFC 2696), a page at a time: each page is a request of its own, so `timeoutMs`
   * bounds each page, never the whole search. Only on a connection of its own (`dedicated`): the
   * paging cookie belongs to the connection.
   */
  searchPages(baseDN: string, options: SearchOptions, controls?: Control[]): AsyncGenerator<SearchResult>;
}

/** A connection opened for one long task (directory sync's listing), outside the pool. */
export interface DedicatedConnection {
  session: LdapSession;
  close(): Promise<void>;
}

export interface PoolOptions {
  /** For log lines: `search` or `bind`. */
  name: string;
  servers: ServerList;
  size: number;
  timeoutMs: number;
  startTLS: boolean;
  tls: ConnectionOptions;
  /** Runs once on every new connection, after StartTLS (the service account's bind). */
  prepare?: (session: LdapSession) => Promise<void>;
  logger: Logger;
}

interface Conn {
  client: Client;
  url: string;
  createdAt: number;
  prepared: boolean;
  /** Has carried an operation: from then on a dropped socket must not be silently reopened. */
  used: boolean;
  /** With StartTLS: the plain socket the TLS one runs over (see `isAlive`). */
  carrier?: Duplex;
  session: LdapSession;
}

/**
 * Whether the server still holds the connection. ldapts's `isConnected` is enough for ldap:// and
 * ldaps://, but at StartTLS it swaps in a TLS socket without watching that one's close, and ignores
 * the close of the plain socket it replaced: after the server hangs up, `isConnected` stays true and
 * the next request waits out the whole `timeoutMs` on a dead socket (at every outage, and again at the
 * first sign-in after one). The plain socket is destroyed with the TLS one, so its state tells.
 */
const isAlive = (conn: Conn): boolean => conn.client.isConnected && !conn.carrier?.destroyed;

/**
 * Each operation in a client span, a child of the request's (docs/tracing.md "What a trace shows"):
 * the server, the operation, a search's scope and how many entries it found. Never a DN (a user's
 * names the person, and a bind's says who signed in), a filter (it holds the name typed), an
 * attribute value or a password. Only when tracing is on: off, the session is the plain one.
 */
function traced(session: LdapSession): LdapSession {
  let server: Record<string, string | number> = { 'network.protocol.name': 'ldap' };
  try {
    const url = new URL(session.url);
    server = { ...server, 'server.address': url.hostname, 'server.port': Number(url.port) || (url.protocol === 'ldaps:' ? 636 : 389) };
  } catch {
    // A URL the WHATWG parser does not take: the span goes without the server's name.
  }
  return {
    url: session.url,
    search: (baseDN, options) =>
      span(
        'LDAP search',
        { ...server, 'ldap.search.scope': options.scope ?? 'sub' },
        async (s) => {
          const result = await session.search(baseDN, options);
          s?.setAttribute('ldap.search.entries', result.searchEntries.length);
          return result;
        },
        'client',
      ),
    bind: (dn, password, controls) => span('LDAP bind', server, () => session.bind(dn, password, controls), 'client'),
    exop: (oid, value, controls) =>
      span('LDAP extended', { ...server, 'ldap.exop.oid': oid }, () => session.exop(oid, value, controls), 'client'),
    modify: (dn, changes, controls) => span('LDAP modify', server, () => session.modify(dn, changes, controls), 'client'),
    // Directory sync's paged listing runs outside any request, where no span would have a parent.
    searchPages: (baseDN, options, controls) => session.searchPages(baseDN, options, controls),
  };
}

/** A connection to a fallback server is closed after this long, so that a recovered primary is used again. */
const FAILBACK_AFTER_MS = 60_000;

/** LDAP result codes that mean "this server cannot serve now", not an answer about the user. */
const SERVER_FAULTS = new Set([1, 3, 11, 51, 52, 80]);

export const isServerAnswer = (err: unknown): err is ResultCodeError => err instanceof ResultCodeError && !SERVER_FAULTS.has(err.code);

class ConnectionLost extends Error {}

const rethrowUnlessAnswer = (err: unknown): void => {
  if (!isServerAnswer(err)) throw err;
};

export class PreparationRefused extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A bounded pool of LDAP connections with failover. Each connection serves one caller at a time (a bind
 * changes who the connection is, so it cannot be shared mid-operation). A caller that finds every
 * connection busy waits at most `timeoutMs`, then gets `BackendUnavailableError`: pool exhaustion is
 * an outage, never a failed login. A connection that fails is dropped, its server marked down, and the
 * operation retried on the next server; never again on a server that failed it already (a connection
 * found dropped is no fault of its server and is simply replaced).
 */
export class ConnectionPool {
  private readonly idle: Conn[] = [];
  private readonly waiters: Array<{ resolve: () => void; timer: NodeJS.Timeout }> = [];
  private open = 0;
  private closed = false;
  /** Connections of `dedicated`, closed with the pool: a listing under way then fails at its next page. */
  private readonly apart = new Set<Conn>();

  constructor(private readonly o: PoolOptions) {}

  async use<T>(fn: (session: LdapSession) => Promise<T>): Promise<T> {
    const attempts = this.o.servers.urls.length + 1;
    // A hung server costs one `timeoutMs`: asking it again, on another pooled or a new connection,
    // would only wait the same time again (docs/decisions.md, "A hung directory").
    const failed = new Set<string>();
    let lastError: unknown;
    for (let attempt = 0; attempt < attempts && failed.size < this.o.servers.urls.length; attempt++) {
      const conn = await this.acquire();
      try {
        if (!conn.prepared) await this.prepare(conn);
        const result = await fn(conn.session);
        this.o.servers.markUp(conn.url);
        this.release(conn);
        return result;
      } catch (err) {
        if (err instanceof PreparationRefused) {
          this.destroy(conn);
          throw new BackendUnavailableError(err.message, { cause: err });
        }
        // The server answered (an LDAP result, or a verdict the caller drew from one): the
        // connection is fine and another server would say the same.
        if (isServerAnswer(err) || err instanceof BackendUnavailableError) {
          this.release(conn);
          throw err;
        }
        this.destroy(conn);
        if (!(err instanceof ConnectionLost)) {
          this.o.servers.markDown(conn.url);
          failed.add(conn.url);
        }
        lastError = err;
        this.o.logger.warn({ url: conn.url, pool: this.o.name, err: (err as Error).message }, 'LDAP server failed; trying the next');
      }
    }
    throw new BackendUnavailableError(`no LDAP server answered (${this.o.servers.urls.join(', ')}): ${(lastError as Error)?.message}`, {
      cause: lastError,
    });
  }

  private async acquire(): Promise<Conn> {
    const deadline = Date.now() + this.o.timeoutMs;
    for (;;) {
      if (this.closed) throw new BackendUnavailableError('LDAP backend is shutting down');
      const conn = this.idle.pop();
      if (conn) {
        if (isAlive(conn) && !this.o.servers.avoid(conn.url)) return conn;
        // Dropped while idle (server restart, idle timeout), or its server failed another pool's
        // operation just now: never reuse it.
        this.destroy(conn);
        continue;
      }
      if (this.open < this.o.size) return this.create();
      await this.waitForRelease(deadline - Date.now());
    }
  }

  private waitForRelease(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve,
        timer: setTimeout(
          () => {
            this.waiters.splice(this.waiters.indexOf(waiter), 1);
            reject(
              new BackendUnavailableError(`all ${this.o.size} LDAP ${this.o.name} connections stayed busy for ${this.o.timeoutMs} ms`),
            );
          },
          Math.max(ms, 0),
        ),
      };
      this.waiters.push(waiter);
    });
  }

  private wakeOne(): void {
    const waiter = this.waiters.shift();
    if (!waiter) return;
    clearTimeout(waiter.timer);
    waiter.resolve();
  }

  private create(): Conn {
    this.open++;
    return this.connect(this.o.servers.preferred());
  }

  private connect(url: string): Conn {
    const client = new Client({
      url,
      timeout: this.o.timeoutMs,
      connectTimeout: this.o.timeoutMs,
      tlsOptions: url.toLowerCase().startsWith('ldaps:') ? this.o.tls : undefined,
      strictDN: false,
    });
    const conn: Conn = { client, url, createdAt: Date.now(), prepared: false, used: false, session: undefined as never };
    // ldapts reconnects silently when an operation finds its socket closed; the new socket would have
    // lost StartTLS and the service bind. So once a connection has been used, a dropped one is refused.
    const run = async <T>(op: () => Promise<T>): Promise<T> => {
      if (conn.used && !isAlive(conn)) throw new ConnectionLost(`connection to ${url} was lost`);
      try {
        return await op();
      } finally {
        conn.used = true;
      }
    };
    const session: LdapSession = {
      url,
      search: (baseDN, options) => run(() => client.search(baseDN, options)),
      bind: (dn, password, controls) => run(() => client.bind(dn, password, controls)),
      exop: (oid, value, controls) => run(async () => void (await client.exop(oid, value, controls))),
      modify: (dn, changes, controls) => run(() => client.modify(dn, changes, controls)),
      async *searchPages(baseDN, options, controls) {
        const pages = client.searchPaginated(baseDN, options, controls);
        // Each page through `run`: a connection dropped between two pages must fail the search, never
        // be reopened by ldapts, unbound and without the cookie's server state, for the next page.
        for (let page = await run(() => pages.next()); !page.done; page = await run(() => pages.next())) yield page.value;
      },
    };
    conn.session = tracingOn() ? traced(session) : session;
    return conn;
  }

  /**
   * A connection of its own, opened for one long task and closed by the caller, counted outside the
   * pool: directory sync's listing, which holds its connection from the first page to the last. The
   * servers are tried in order until one is connected and prepared (the service bind); after that, a
   * failure is the caller's to report: a paged search cannot resume on another server.
   */
  async dedicated(): Promise<DedicatedConnection> {
    let lastError: unknown;
    for (const url of this.o.servers.candidates()) {
      if (this.closed) throw new BackendUnavailableError('LDAP backend is shutting down');
      const conn = this.connect(url);
      try {
        await this.prepare(conn);
        // Without StartTLS or a service bind nothing has opened the socket yet: the root DSE does,
        // so that a dead server is passed over here too. Its answer, whatever it is, is not the point.
        if (!this.o.startTLS && !this.o.prepare)
          await conn.session.search('', { scope: 'base', attributes: ['1.1'] }).catch(rethrowUnlessAnswer);
        this.apart.add(conn);
        return {
          session: conn.session,
          close: async () => {
            this.apart.delete(conn);
            await conn.client.unbind().catch(() => undefined);
          },
        };
      } catch (err) {
        void conn.client.unbind().catch(() => undefined);
        if (err instanceof PreparationRefused) throw new BackendUnavailableError(err.message, { cause: err });
        this.o.servers.markDown(url);
        lastError = err;
        this.o.logger.warn({ url, pool: this.o.name, err: (err as Error).message }, 'LDAP server failed; trying the next');
      }
    }
    throw new BackendUnavailableError(`no LDAP server answered (${this.o.servers.urls.join(', ')}): ${(lastError as Error)?.message}`, {
      cause: lastError,
    });
  }

  private async prepare(conn: Conn): Promise<void> {
    if (this.o.startTLS) {
      // Options of its own for each connection: ldapts writes the plain socket it wraps into them.
      const options: ConnectionOptions = { ...this.o.tls };
      await withTimeout(conn.client.startTLS(options), this.o.timeoutMs, `StartTLS with ${conn.url}`);
      conn.carrier = options.socket;
      conn.used = true;
    }
    try {
      await this.o.prepare?.(conn.session);
    } catch (err) {
      if (isServerAnswer(err)) throw new PreparationRefused(`${conn.url} refused the service account: ${err.message}`);
      throw err;
    }
    conn.prepared = true;
  }

  private release(conn: Conn): void {
    const stale = conn.url !== this.o.servers.preferred() && Date.now() - conn.createdAt > FAILBACK_AFTER_MS;
    if (this.closed || stale || !conn.prepared) {
      this.destroy(conn);
      return;
    }
    this.idle.push(conn);
    this.wakeOne();
  }

  private destroy(conn: Conn): void {
    this.open--;
    void conn.client.unbind().catch(() => undefined);
    this.wakeOne();
  }

  async close(): Promise<void> {
    this.closed = true;
    const conns = this.idle.splice(0);
    this.open -= conns.length;
    const apart = [...this.apart];
    this.apart.clear();
    await Promise.all([...conns, ...apart].map((c) => c.client.unbind().catch(() => undefined)));
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.resolve();
    }
  }
}
