import { join } from 'node:path';
import { startGlewlwyd, type GlewlwydPeer } from './glewlwyd.ts';
import { waitFor200 } from './http.ts';
import { REPO } from './latchkey.ts';
import { freePort } from '../test/helpers/ports.ts';
import { spawnTracked, type Tracked } from './processes.ts';

/** A peer server: a separate process on a free loopback port. */
export interface Peer {
  name: string;
  url: string;
  process: Tracked;
}

/**
 * Starts bench/peers/<script> with `node --import tsx` (as Latchkey itself runs) and waits until
 * `readyPath` answers 200.
 */
async function startPeer(
  name: string,
  script: string,
  readyPath: string,
  workDir: string,
  env: Record<string, string> = {},
): Promise<Peer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const tracked = spawnTracked(name, process.execPath, ['--import', 'tsx', join(REPO, 'bench', 'peers', script)], {
    cwd: REPO,
    env: { ...process.env, PORT: String(port), ...env },
    logFile: join(workDir, `${script}.log`),
  });
  try {
    await waitFor200(url + readyPath, { timeoutMs: 30_000, alive: tracked.running, intervalMs: 50 });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- ${name} log ---\n${tracked.output()}`);
  }
  return { name, url, process: tracked };
}

export interface Peers {
  oidcProvider: Peer;
  hello: Peer;
  argon2: Peer;
  /** The real SSO server, when installed: client_credentials, userinfo and the password grant. */
  glewlwyd?: GlewlwydPeer;
  /** Its package version, or why it was skipped. */
  glewlwydNote: string;
  /** Every peer process, to stop them all. */
  stopAll(): Promise<void>;
}

/** The peers, started side by side; Glewlwyd as the same service client and one user. */
export async function startPeers(
  workDir: string,
  service: { clientId: string; clientSecret: string },
  user: { username: string; password: string },
): Promise<Peers> {
  const password = user.password;
  const [oidcProvider, hello, argon2, glewlwyd] = await Promise.all([
    startPeer('oidc-provider', 'oidc-provider.ts', '/.well-known/openid-configuration', workDir, {
      PEER_CLIENT_ID: service.clientId,
      PEER_CLIENT_SECRET: service.clientSecret,
    }),
    startPeer('Express hello', 'hello.ts', '/me', workDir),
    startPeer('argon2id verify', 'argon2-verify.ts', '/healthz', workDir, { PEER_PASSWORD: password }),
    // A peer that fails to set up is reported, not fatal: the rest of the run still measures.
    startGlewlwyd(workDir, service, user).catch((err: Error) => ({ skipped: `Glewlwyd did not start: ${err.message.split('\n')[0]}` })),
  ]);
  const real = 'peer' in glewlwyd ? glewlwyd.peer : undefined;
  return {
    oidcProvider,
    hello,
    argon2,
    ...(real ? { glewlwyd: real } : {}),
    glewlwydNote: 'peer' in glewlwyd ? `Glewlwyd ${glewlwyd.version}` : glewlwyd.skipped,
    stopAll: async () => {
      await Promise.all([oidcProvider, hello, argon2, ...(real ? [real] : [])].map((p) => p.process.stop()));
    },
  };
}
