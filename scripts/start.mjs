// `npm start`: the bundled server, rebuilt first if the sources changed since `npm ci` built it.
// One process: no compiler at start when the bundle is fresh.
import { pathToFileURL } from 'node:url';
import { buildServer, entry, isStale } from './build.mjs';

if (isStale()) await buildServer();
await import(pathToFileURL(entry).href);
