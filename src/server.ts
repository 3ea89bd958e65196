import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import pino, { type Logger } from 'pino';
import { createApp } from './app.ts';
import type { Config } from './config/schema.ts';
import type { AppContext } from './context.ts';
import { connect, isFresh, migrate, type Database } from './db/connect.ts';
import { beginFirstKeys } from './keys/signing-keys.ts';
import { createContext } from './services.ts';
import { traceIds, tracingOn } from './telemetry/trace.ts';

export interface RunningServer {
  ctx: AppContext;
  server: Server;
  /** Where it listens, e.g. http://127.0.0.1:8080. */
  url: string;
  /** The database's knex handle, for tools and tests that look at the tables; routes never get it. */
  sql: Database['knex'];
  close(): Promise<void>;
}

/** The log; with tracing on (docs/tracing.md), each line written inside a span carries its trace_id and span_id. */
export const createLogger = (config: Config): Logger =>
  pino({
    level: config.logLevel,
    base: { service: 'latchkey' },
    redact: ['password', '*.password', 'client_secret'],
    ...(tracingOn() ? { mixin: traceIds } : {}),
  });

/**
 * Every `keys.reloadInterval`: re-read the signing keys (another process may have rotated them) and
 * rotate any older than `keys.rotateEvery`, once at start too.
 */
async function scheduleKeyRotation(ctx: AppContext): Promise<NodeJS.Timeout> {
  const check = () =>
    ctx.keys
      .rotateIfDue(ctx.config.keys.rotateEvery * 1000)
      .then((rotated) => {
        if (rotated.length > 0)
          ctx.logger.info({ kids: rotated.map((k) => k.kid), activatesAt: rotated[0]!.activatesAt }, 'signing keys rotated on schedule');
      })
      .catch((err: Error) => ctx.logger.error({ err: err.message }, 'signing key check failed'));
  await check();
  return setInterval(check, ctx.config.keys.reloadInterval * 1000).unref();
}

/** The address is taken, or may not be bound: a message for the operator, not a stack trace. */
export class ListenError extends Error {}

/** Listens on the configured address; a listen error is turned into words an operator can act on. */
function listen({ listener, messages }: ReturnType<typeof createApp>, config: Config): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const s = createServer(messages, listener);
    const done = (err?: Error) => {
      s.off('error', done);
      if (!err) return resolve(s);
      const code = (err as NodeJS.ErrnoException).code;
      const where = `${config.host}:${config.port}`;
      if (code === 'EADDRINUSE')
        reject(new ListenError(`${where} is already in use: stop what listens there, or set PORT (or HOST) to a free address`));
      else if (code === 'EACCES')
        reject(new ListenError(`${where} may not be bound by this user: choose a port above 1023, or grant the capability to bind it`));
      else if (code === 'EADDRNOTAVAIL') reject(new ListenError(`${where}: no interface of this machine has that address; check HOST`));
      else reject(err);
    };
    s.once('error', done);
    s.listen(config.port, config.host, () => done());
  });
}

/**
 * Migrates, wires the context, makes the first admin and the built-in clients (and, in the context,
 * the first signing keys). In cluster mode the primary does this once before it starts the workers,
 * so that they do not race to make them; in a worker it then finds everything in place.
 */
export async function openDeployment(config: Config, logger: Logger): Promise<{ ctx: AppContext; database: Database }> {
  const database = connect(config.databaseUrl, { logger, backgroundCheckpoints: true });
  try {
    // A fresh deployment makes its first signing keys on pool threads while the migrations run.
    const firstKeys = (await isFresh(database)) ? beginFirstKeys() : undefined;
    const applied = await migrate(database);
    if (applied.length > 0) logger.info({ migrations: applied }, 'migrations applied');
    const ctx = await createContext(config, database, logger, { firstKeys });

    const admin = await ctx.users.ensureAdmin(config.admin.username, config.admin.password);
    if (admin.generatedPassword) {
      // docs/configuration.md: the one secret ever printed, once, to the console (not the structured log).
      process.stdout.write(
        `\n  First admin user created: ${config.admin.username}\n  Generated password (shown once): ${admin.generatedPassword}\n\n`,
      );
    } else if (admin.created) {
      logger.info({ username: config.admin.username }, 'first admin user created');
    }

    await ctx.clients.ensureBuiltin(config.publicUrl);
    return { ctx, database };
  } catch (err) {
    await database.knex.destroy().catch(() => undefined);
    throw err;
  }
}

/** Opens the deployment, schedules its periodic jobs and listens. */
export async function startServer(config: Config, logger: Logger = createLogger(config)): Promise<RunningServer> {
  const { ctx, database } = await openDeployment(config, logger);
  try {
    const keyCheck = await scheduleKeyRotation(ctx);
    // The admin API (Apollo, graphql) loads after the server listens: a quarter of a second of start-up
    // that sign-ins never wait for. Requests to /graphql meanwhile wait for it.
    const adminApiServer = import('./admin/server.ts').then(({ adminApi }) => adminApi(ctx));
    adminApiServer.catch((err: Error) => logger.error({ err: err.message }, 'the admin API failed to start'));
    const server = await listen(createApp(ctx, adminApiServer), config);
    server.keepAliveTimeout = 65_000;
    const { port } = server.address() as AddressInfo;
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

    const stopPurge = ctx.retention.schedule();
    const stopDirectorySync = ctx.directorySync.schedule();
    ctx.logoutNotices.start();
    ctx.samlLogouts.start();
    ctx.webhookDeliveries.start();
    // SCIM invitations an earlier process queued and did not mail (docs/scim-provisioning.md "How SCIM users sign in").
    ctx.scim.invitations.start();
    // Its cursor is made at the first start with `audit.syslog` and kept after (docs/audit-to-siem.md).
    await ctx.syslog.start();
    const stopTokenAudit = ctx.tokenAudit.schedule();
    // docs/decisions.md "Events out": sinks left behind past audit.sinkMaxBacklog, and what PostgreSQL holds back.
    const stopEventWatch = ctx.events.schedule();
    // Said last, once every worker has started: a supervisor (or a test) that acts on this line, a
    // SIGTERM included, finds the process whole (main.ts installs its signal handlers when this returns).
    logger.info({ url, publicUrl: config.publicUrl, database: config.databaseUrl.split(':')[0] }, 'latchkey listening');
    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          // In-flight requests get a moment to finish; then the rest are cut.
          setTimeout(() => server.closeAllConnections(), 5000).unref();
        });
        clearInterval(keyCheck);
        await stopPurge();
        // A pass under way stops at its next batch (recorded as failed; the next one picks up), before the directory and database close.
        await stopDirectorySync();
        // Deliveries under way are cut and released: another process (or the next start) sends them.
        await ctx.logoutNotices.stop();
        await ctx.samlLogouts.stop();
        await ctx.webhookDeliveries.stop();
        // The invitation being mailed finishes; the others stay queued for the next start.
        await ctx.scim.invitations.stop();
        // Reset requests answered already finish their lookup and mail before the database closes.
        await ctx.passwordReset.settled();
        ctx.passwordReset.close();
        // After the last request: the counts it added are written before the database closes.
        await stopTokenAudit();
        await stopEventWatch();
        // After the last event of this process: the connection is closed cleanly, so what was sent counts as delivered.
        await ctx.syslog.stop();
        ctx.dbOutage.stop();
        await (await adminApiServer.catch(() => undefined))?.stop();
        await ctx.identity.close();
        await database.knex.destroy();
      })());
    return { ctx, server, url, sql: database.knex, close };
  } catch (err) {
    await ctx.identity.close().catch(() => undefined);
    await database.knex.destroy().catch(() => undefined);
    throw err;
  }
}
