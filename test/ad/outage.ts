import { afterAll, afterEach, describe, expect, test } from '@jest/globals';
import type { DatabaseKind } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { get } from '../helpers/http.ts';
import { people } from './directory.ts';
import { adConfig, dc, Servers, signIn, startTlsConfig } from './harness.ts';

/**
 * Far above what noticing a closed connection takes; the bug this guards against waited all of it.
 * Long, so that a DC or a machine slow for a moment (6.8 s once in CI, 50 ms here) is never taken for
 * that bug: the bounds below are a third of it, and the server's log tells the two apart.
 */
const TIMEOUT_MS = 30_000;
const PROMPT_MS = TIMEOUT_MS / 3;

/** What the server logged while `fn` ran: a request that waited out the timeout says "timed out". */
async function loggedDuring<T>(logs: string[], fn: () => Promise<T>): Promise<[T, string[]]> {
  const from = logs.length;
  const result = await fn();
  return [result, logs.slice(from)];
}

const elapsed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const start = performance.now();
  const result = await fn();
  return [result, Math.round(performance.now() - start)];
};

/**
 * The DC goes down while Latchkey holds pooled connections to it, then comes back. Both ways AD offers
 * TLS must notice the closed connections at once: the outage is a prompt 503 (never a failed login),
 * and the first sign-in after the DC is back (once the background probe has found it answering, docs/decisions.md
 * "A hung directory") succeeds without first timing out on a dead connection.
 * `AD_TIMINGS=1` prints the measured times.
 */
export function outageTests(kind: DatabaseKind): void {
  describe(`AD outage and recovery on ${kind}`, () => {
    const servers = new Servers(kind);
    afterEach(() => dc().start()); // a no-op when it runs
    afterAll(() => servers.stopAll());

    test.each([
      ['StartTLS', startTlsConfig],
      ['ldaps', adConfig],
    ] as const)(
      '%s: a stopped DC is a prompt 503 and /readyz names it; once a probe finds it back, the first sign-in succeeds at once',
      async (transport, config) => {
        const server = await servers.start(config({ timeoutMs: TIMEOUT_MS }));
        const alice = () => signIn(server, 'alice', people.alice.password);
        expect((await alice()).status).toBe(200); // both pools now hold a connection to the DC

        await dc().stop();
        const [[down, outageMs], outageLog] = await loggedDuring(server.logs, () => elapsed(alice));
        expect(down).toEqual({
          status: 503,
          body: { error: 'temporarily_unavailable', error_description: 'the identity backend is unreachable; try again later' },
        });
        expect(await (await get(`${server.url}/readyz`)).json()).toEqual({ database: 'up', backends: { corp: 'down', local: 'up' } });

        await dc().start();
        await eventually(
          'the probe finds the DC answering',
          async () => ((await (await get(`${server.url}/readyz`)).json()) as { backends: Record<string, string> }).backends.corp === 'up',
        );
        const [[up, recoveryMs], recoveryLog] = await loggedDuring(server.logs, () => elapsed(alice));
        expect(up.status).toBe(200);

        if (process.env.AD_TIMINGS)
          process.stdout.write(`AD ${transport} on ${kind}: 503 after ${outageMs} ms; first sign-in after restart ${recoveryMs} ms\n`);
        // No operation waited on a dead connection: nothing timed out, and neither answer took long.
        expect(outageLog.filter((line) => /timed out|Connection timeout/.test(line))).toEqual([]);
        expect(recoveryLog.filter((line) => line.includes('LDAP server failed'))).toEqual([]);
        expect(outageMs).toBeLessThan(PROMPT_MS);
        expect(recoveryMs).toBeLessThan(PROMPT_MS);
      },
    );
  });
}
