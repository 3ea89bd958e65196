import { join } from 'node:path';
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
async function startPeer(name: string, script: string, readyPath: string, workDir: string, env: Record<string, string> = {}): Promise<Peer> {
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
}

/** The three peers, started side by side. */
export async function startPeers(workDir: string, service: { clientId: string; clientSecret: string }, password: string): Promise<Peers> {
  const [oidcProvider, hello, argon2] = await Promise.all([
    startPeer('oidc-provider', 'oidc-provider.ts', '/.well-known/openid-configuration', workDir, { PEER_CLIENT_ID: service.clientId, PEER_CLIENT_SECRET: service.clientSecret }),
    startPeer('Express hello', 'hello.ts', '/me', workDir),
    startPeer('argon2id verify', 'argon2-verify.ts', '/healthz', workDir, { PEER_PASSWORD: password }),
  ]);
  return { oidcProvider, hello, argon2 };
}
