// `npm start`: the bundled server, rebuilt first if the sources changed since `npm ci` built it.
// One process: no compiler at start when the bundle is fresh. In cluster mode (WORKERS) each worker
// runs this file too; only the primary builds, so that every worker runs the bundle it checked.
import cluster from 'node:cluster';
import { pathToFileURL } from 'node:url';
import { buildConsole, buildServer, entry, isConsoleStale, isStale } from './build.mjs';

if (cluster.isPrimary) {
  if (isStale()) await buildServer();
  // The admin console is not worth a server that does not start: /admin says it is missing instead.
  if (isConsoleStale()) await buildConsole().catch((err) => process.stderr.write(`latchkey: the admin console was not built: ${err.message}\n`));
}
await import(pathToFileURL(entry).href);
