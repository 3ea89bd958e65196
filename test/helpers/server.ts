import pino from 'pino';
import { CLI_ACTOR } from '../../src/audit/record.ts';
import type { RegisterClientInput } from '../../src/clients/service.ts';
import { loadConfig } from '../../src/config/load.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { freshDatabase, type DatabaseKind, type TestDatabase } from './databases.ts';
import { freePort } from './ports.ts';

export const ADMIN_PASSWORD = 'admin-password-for-tests';

export interface TestServer extends RunningServer {
  db: TestDatabase;
  kind: DatabaseKind;
  /** The server's warnings and errors, as the JSON lines an operator would see. */
  logs: string[];
  stop(): Promise<void>;
  /** Registers a client through the service layer; returns its id and secret. */
  client(input?: Partial<RegisterClientInput>): Promise<{ clientId: string; clientSecret: string | null; redirectUri: string }>;
  /** Creates a database-backend user. */
  user(
    username: string,
    password: string,
    extra?: { email?: string; displayName?: string; roles?: string[]; groups?: string[] },
  ): Promise<string>;
}

/** The real server on a free loopback port, on a fresh database of the given kind. */
export async function startTestServer(kind: DatabaseKind, overrides: Record<string, unknown> = {}): Promise<TestServer> {
  const db = await freshDatabase(kind);
  const port = await freePort();
  const config = loadConfig(
    { LATCHKEY_CONFIG: undefined },
    {
      port,
      host: '127.0.0.1',
      publicUrl: `http://127.0.0.1:${port}`,
      databaseUrl: db.url,
      secret: 'test-secret-test-secret-test-secret-0123',
      admin: { username: 'admin', password: ADMIN_PASSWORD },
      ...overrides,
    },
  );
  const logs: string[] = [];
  const echo = process.env.TEST_LOG_LEVEL;
  const logger = pino(
    { level: echo ?? 'warn' },
    {
      write: (line: string) => {
        logs.push(line);
        if (echo) process.stdout.write(line);
      },
    },
  );
  const running = await startServer(config, logger);
  return {
    ...running,
    db,
    kind,
    logs,
    async stop() {
      await running.close();
      await db.drop();
    },
    async client(input = {}) {
      const redirectUri = input.redirectUris?.[0] ?? 'http://localhost:3000/callback';
      const { client, clientSecret } = await running.ctx.clients.register(
        {
          name: 'Test app',
          redirectUris: [redirectUri],
          ...input,
        },
        CLI_ACTOR,
      );
      return { clientId: client.clientId, clientSecret, redirectUri };
    },
    async user(username, password, extra = {}) {
      return (await running.ctx.users.create({ username, password, ...extra }, CLI_ACTOR)).id;
    },
  };
}
