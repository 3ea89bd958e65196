import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import pino, { type Logger } from 'pino';
import { createApp } from './app.ts';
import type { Config } from './config/schema.ts';
import { createContext, type AppContext } from './context.ts';
import { connect, migrate, type Db } from './db/connect.ts';

export interface RunningServer {
  ctx: AppContext;
  server: Server;
  /** Where it listens, e.g. http://127.0.0.1:8080. */
  url: string;
  /** The database handle, for tools and tests that look at the tables; routes never get it. */
  sql: Db;
  close(): Promise<void>;
}

export const createLogger = (config: Config): Logger =>
  pino({ level: config.logLevel, base: { service: 'latchkey' }, redact: ['password', '*.password', 'client_secret'] });

/**
 * Every `keys.reloadInterval`: re-read the signing keys (another process may have rotated them) and
 * rotate any older than `keys.rotateEvery`, once at start too.
 */
async function scheduleKeyRotation(ctx: AppContext): Promise<NodeJS.Timeout> {
  const check = () =>
    ctx.keys
      .rotateIfDue(ctx.config.keys.rotateEvery * 1000)
      .then((rotated) => {
        if (rotated.length > 0) ctx.logger.info({ kids: rotated.map((k) => k.kid), activatesAt: rotated[0]!.activatesAt }, 'signing keys rotated on schedule');
      })
      .catch((err: Error) => ctx.logger.error({ err: err.message }, 'signing key check failed'));
  await check();
  return setInterval(check, ctx.config.keys.reloadInterval * 1000).unref();
}

/** Migrates, wires the context, bootstraps the first admin and listens. */
export async function startServer(config: Config, logger: Logger = createLogger(config)): Promise<RunningServer> {
  const db = connect(config.databaseUrl, logger);
  try {
    const applied = await migrate(db);
    if (applied.length > 0) logger.info({ migrations: applied }, 'migrations applied');
    const ctx = await createContext(config, db, logger);

    const admin = await ctx.users.ensureAdmin(config.admin.username, config.admin.password);
    if (admin.generatedPassword) {
      // SPEC 1: the one secret ever printed, once, to the console (not the structured log).
      process.stdout.write(
        `\n  First admin user created: ${config.admin.username}\n  Generated password (shown once): ${admin.generatedPassword}\n\n`,
      );
    } else if (admin.created) {
      logger.info({ username: config.admin.username }, 'first admin user created');
    }

    await ctx.clients.ensureBuiltin();
    const keyCheck = await scheduleKeyRotation(ctx);
    // The admin API (Apollo, graphql) loads after the server listens: a quarter of a second of start-up
    // that sign-ins never wait for. Requests to /graphql meanwhile wait for it.
    const adminApiServer = import('./admin/server.ts').then(({ adminApi }) => adminApi(ctx));
    adminApiServer.catch((err: Error) => logger.error({ err: err.message }, 'the admin API failed to start'));
    const app = createApp(ctx, adminApiServer);
    const server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(config.port, config.host, () => resolve(s));
      s.once('error', reject);
    });
    server.keepAliveTimeout = 65_000;
    const { port } = server.address() as AddressInfo;
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
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
        await (await adminApiServer.catch(() => undefined))?.stop();
        await ctx.identity.close();
        await db.destroy();
      })());
    return { ctx, server, url, sql: db, close };
  } catch (err) {
    await db.destroy().catch(() => undefined);
    throw err;
  }
}
