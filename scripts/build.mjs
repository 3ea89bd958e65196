// Bundles the server into dist/ with esbuild, so that `npm start` runs JavaScript and compiles no
// TypeScript at start, and the admin console (console/) into dist/console/. Run by `npm ci` (the
// `prepare` script); `npm start` (scripts/start.mjs) builds again first when a source file is newer
// than the bundle, so an edited checkout never runs stale code.
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
export const entry = join(root, 'dist/main.js');
/** The console's page; its scripts and styles are beside it in assets/, named by their content's hash. */
export const consoleIndex = join(root, 'dist/console/index.html');

const typescript = (name) => name.endsWith('.ts');
const consoleSource = (name) => /\.(tsx?|css|html)$/.test(name);

/** The newest modification time of the sources the bundle is made from. */
function newest(dir, isSource = typescript) {
  let latest = 0;
  for (const item of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, item.name);
    if (item.isDirectory()) latest = Math.max(latest, newest(path, isSource));
    else if (isSource(item.name)) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

export const isStale = () =>
  !existsSync(entry) || Math.max(...['src', 'plugins', 'migrations'].map((d) => newest(join(root, d)))) > statSync(entry).mtimeMs;

export const isConsoleStale = () =>
  !existsSync(consoleIndex) || newest(join(root, 'console'), consoleSource) > statSync(consoleIndex).mtimeMs;

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

/**
 * The admin console: one script and one style sheet (Preact and the console's TypeScript, minified),
 * named by content hash so they can be cached for good, and the page that loads them. Built beside
 * its final place and moved there whole, so a running server never serves half a build.
 */
export async function buildConsole() {
  const { build } = await import('esbuild');
  const out = join(root, 'dist/console');
  const staging = `${out}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  const result = await build({
    entryPoints: { console: join(root, 'console/src/main.tsx') },
    outdir: join(staging, 'assets'),
    entryNames: '[name]-[hash]',
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: ['chrome111', 'firefox115', 'safari16.4'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((f) => basename(f));
  const script = outputs.find((f) => f.endsWith('.js'));
  const style = outputs.find((f) => f.endsWith('.css'));
  const page = readFileSync(join(root, 'console/index.html'), 'utf8').replace(
    '<!-- assets -->',
    `<link rel="stylesheet" href="assets/${style}" />\n    <script type="module" src="assets/${script}"></script>`,
  );
  writeFileSync(join(staging, 'index.html'), page);
  rmSync(out, { recursive: true, force: true });
  renameSync(staging, out);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await Promise.all([buildServer(), buildConsole()]);
