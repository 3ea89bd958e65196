// Bundles the server into dist/ with esbuild, so that `npm start` runs JavaScript and compiles no
// TypeScript at start. Run by `npm ci` (the `prepare` script); `npm start` (scripts/start.mjs) builds
// again first when a source file is newer than the bundle, so an edited checkout never runs stale code.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
export const entry = join(root, 'dist/main.js');

/** The newest modification time of the sources the bundle is made from. */
function newest(dir) {
  let latest = 0;
  for (const item of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, item.name);
    if (item.isDirectory()) latest = Math.max(latest, newest(path));
    else if (item.name.endsWith('.ts')) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

export const isStale = () =>
  !existsSync(entry) || Math.max(...['src', 'plugins', 'migrations'].map((d) => newest(join(root, d)))) > statSync(entry).mtimeMs;

export async function buildServer() {
  // Imported only when there is something to build: the staleness check alone costs next to nothing.
  const { build } = await import('esbuild');
  await build({
    entryPoints: [join(root, 'src/main.ts')],
    outdir: join(root, 'dist'),
    bundle: true,
    // The admin API is a chunk of its own, loaded after the server listens.
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Dependencies stay in node_modules (native modules, lazy requires): only our own code is bundled.
    packages: 'external',
    sourcemap: 'linked',
    logLevel: 'warning',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildServer();
