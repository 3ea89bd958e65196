// `npm start`: the bundled server, rebuilt first if the sources changed since `npm ci` built it.
// One process: no compiler at start when the bundle is fresh. In cluster mode (WORKERS) each worker
// runs this file too; only the primary builds, so that every worker runs the bundle it checked.
import cluster from 'node:cluster';
import { pathToFileURL } from 'node:url';
import { buildServer, entry, isStale } from './build.mjs';

if (cluster.isPrimary && isStale()) await buildServer();
await import(pathToFileURL(entry).href);
