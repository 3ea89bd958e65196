// `npm start`: the bundled server, rebuilt first if the sources changed since `npm ci` built it.
// One process: no compiler at start when the bundle is fresh. In cluster mode (WORKERS) each worker
// runs this file too; only the primary builds, so that every worker runs the bundle it checked.
//
// package.json starts it with two V8 heap flags (cluster workers inherit them): a young generation of
// 2 × 4 MiB instead of 2 × 16 (--max-semi-space-size=4) and an old generation allowed to grow to 1.5×
// what the last full GC kept instead of up to 4× (--heap-growing-percent=50). Under load at 32
// connections the peak RSS fell from 178–228 MiB to 135–145 MiB on every path but the password
// grant, at the same throughput: few objects outlive their request (src/http/express-messages.ts), so
// the extra scavenges and full GCs find little to do. docs/performance.md has the figures.
//
// And with MALLOC_ARENA_MAX=2 in the environment (read by glibc when the process starts, so it is set
// in package.json, not here): glibc gives each thread that allocates (the libuv pool hashing passwords
// and signing, V8's compiler and GC helpers) an arena of its own, up to 8 per core, and memory freed in
// an arena stays resident for that arena's next use. Two arenas took 3-5 MiB off every path's peak RSS
// (cores are few and the threads allocate rarely: no measured cost in throughput). On musl the
// variable means nothing and nothing changes.
import cluster from 'node:cluster';
import { pathToFileURL } from 'node:url';
import { buildConsole, buildServer, entry, isConsoleStale, isStale } from './build.mjs';

if (cluster.isPrimary) {
  if (isStale()) await buildServer();
  // The admin console is not worth a server that does not start: /admin says it is missing instead.
  if (isConsoleStale())
    await buildConsole().catch((err) => process.stderr.write(`latchkey: the admin console was not built: ${err.message}\n`));
}
await import(pathToFileURL(entry).href);
