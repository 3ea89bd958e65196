/**
 * Keeps the layers running one way (docs/development.md "The house"). Run by `npm test` (`npm run typecheck`).
 * Every module of src/ and plugins/ belongs to one layer, bottom to top:
 *
 *   1 foundation   src/errors/, src/config/, src/crypto/, src/outbound/, src/clock.ts, src/paths.ts,
 *                  src/root.ts, src/metrics/{registry,request-stats}.ts, src/cluster/messages.ts,
 *                  src/telemetry/ (the span helper every layer may call) but its http.ts
 *   2 model        every `src/<capability>/model.ts`: the domain types (User, Client, SsoSession, …), no SQL
 *   3 database     src/db/ (connect, the fast statements and group commit, the gate, the `Transaction` type)
 *   4 queries      every `*queries.ts` module: the only SQL besides src/db/
 *   5 services     the rest of each capability's folder (audit, clients, users, tokens, login, mfa,
 *                  throttle, keys, retention, identity, saml, kerberos) and plugins/
 *   6 root         src/services.ts (the one composition root) and src/context.ts (the AppContext it builds)
 *   7 http         src/web/, src/oauth/, src/oidc/, src/admin/, src/admin-console/, src/ops/, src/http/,
 *                  src/metrics/http.ts, src/cluster/worker-metrics.ts, src/telemetry/http.ts, src/app.ts
 *   8 entry        src/server.ts, src/main.ts, src/cli/, src/cluster/primary.ts
 *
 * A module may import (types included) from its own layer or a lower one. The check fails, naming
 * file and line, when
 *  - an import runs back up the layers;
 *  - modules import each other in a circle (types included: a circle of types is still one design);
 *  - SQL is built or run outside a queries module or src/db/;
 *  - a route, resolver or page (the http layer) imports a queries module: it goes through a service;
 *  - a module takes a domain type from a queries module: types live in model modules, and a queries
 *    module lends only its own `…Queries` type (to the services it is handed to);
 *  - the http layer records an audit event: the service that finishes an act writes its event;
 *  - src/web/ imports src/oauth/: the protocol endpoints use the browser pages, never the reverse;
 *  - a plugin imports anything of the server but the plugin kit (src/identity/plugin-kit.ts);
 *  - a module below the http layer imports express (types included).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/** The tree to check: the repository, or a folder named on the command line (the check's own test). */
const root = process.argv[2] ? `${process.argv[2].replace(/\/$/, '')}/` : new URL('..', import.meta.url).pathname;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'generated' || name === 'node_modules' ? [] : files(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const queriesModule = (f: string) => /(^|[/-])queries\.ts$/.test(f);
const modelModule = (f: string) => /^src\/[a-z-]+\/model\.ts$/.test(f);

/** The layers, bottom first; a module's layer is the one whose test it passes (services excludes queries modules). */
const LAYERS: Array<{ name: string; holds: (file: string) => boolean }> = [
  {
    name: 'foundation',
    holds: (f) =>
      /^src\/(errors|config|crypto|outbound)\//.test(f) ||
      /^src\/(clock|paths|root)\.ts$/.test(f) ||
      /^src\/metrics\/(registry|request-stats)\.ts$/.test(f) ||
      f === 'src/cluster/messages.ts' ||
      (f.startsWith('src/telemetry/') && f !== 'src/telemetry/http.ts'),
  },
  { name: 'model', holds: modelModule },
  { name: 'database', holds: (f) => f.startsWith('src/db/') },
  { name: 'queries', holds: queriesModule },
  {
    name: 'services',
    holds: (f) =>
      !queriesModule(f) &&
      !modelModule(f) &&
      (/^src\/(access|audit|clients|users|tokens|login|mfa|throttle|keys|retention|identity|password-reset|saml|directory-sync|scim|admin-roles|events|webhooks|kerberos)\//.test(
        f,
      ) ||
        f.startsWith('plugins/')),
  },
  { name: 'root', holds: (f) => f === 'src/services.ts' || f === 'src/context.ts' },
  {
    name: 'http',
    holds: (f) =>
      /^src\/(web|oauth|oidc|admin|admin-console|ops|http|scim-api)\//.test(f) ||
      ['src/app.ts', 'src/metrics/http.ts', 'src/cluster/worker-metrics.ts', 'src/telemetry/http.ts'].includes(f),
  },
  { name: 'entry', holds: (f) => /^src\/(server|main)\.ts$/.test(f) || f.startsWith('src/cli/') || f === 'src/cluster/primary.ts' },
];

/** The layer of a module, checked top down; -1 for a module in none. */
function layerOf(file: string): number {
  for (let i = LAYERS.length - 1; i >= 0; i--) if (LAYERS[i]!.holds(file)) return i;
  return -1;
}

const HTTP = LAYERS.findIndex((l) => l.name === 'http');
const isQueries = (file: string) => LAYERS[layerOf(file)]?.name === 'queries';
const isDb = (file: string) => file.startsWith('src/db/');

const sql = /\b(db|trx|knex)\s*\(|\b(db|trx|knex)\.(raw|transaction|schema|migrate|select|from|insert|update)\b/;
const valueImport = /^import\s+(?!type\b)[^;]*from\s+'([^']+)'/;
/** Every `import … from`, `export … from` and `import('…')` of a relative module, with its line. */
const importPattern = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g;

/** `import {…} from '…'` and `export {…} from '…'` of a relative module, with the names. */
const namedImport = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?\{([^}]*)\}\s*from\s+'(\.[^']+)'/g;
/** An audit event written directly: any method of the audit log (`ctx.audit.record(…)`, `audit.change(…)`). */
const auditCall = /\b(audit|auditLog)\s*\.\s*(record|change)\s*\(/;
const KIT = 'src/identity/plugin-kit.ts';

interface Edge {
  to: string;
  line: number;
}

const problems: string[] = [];
const graph = new Map<string, Edge[]>();
const note = (text: string) => problems.push(text);

for (const path of [...files(join(root, 'src')), ...files(join(root, 'plugins'))]) {
  const file = relative(root, path);
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  if (layerOf(file) < 0) problems.push(`${file}: in no layer; add it to LAYERS in scripts/check-layers.ts`);
  lines.forEach((line, i) => {
    const code = line.replace(/\/\/.*$/, '');
    if (!isQueries(file) && !isDb(file) && sql.test(code)) note(`${file}:${i + 1}: SQL outside a queries module: ${line.trim()}`);
    if (layerOf(file) < HTTP && /from\s+'express'/.test(code)) note(`${file}:${i + 1}: below the http layer, imports express`);
    const imported = valueImport.exec(line)?.[1];
    if (imported && LAYERS[layerOf(file)]?.name === 'http' && queriesModule(imported)) {
      note(`${file}:${i + 1}: the HTTP layer imports a queries module (${imported}); go through a service`);
    }
    if (LAYERS[layerOf(file)]?.name === 'http' && auditCall.test(code)) {
      note(`${file}:${i + 1}: the HTTP layer records an audit event; the service that finishes the act writes it`);
    }
  });
  for (const match of text.matchAll(namedImport)) {
    const [, names, spec] = match;
    const line = text.slice(0, match.index + match[0].search(/\S/)).split('\n').length;
    const target = normalize(join(dirname(file), spec!));
    if (queriesModule(target) && !queriesModule(file) && !isDb(file) && file !== 'src/services.ts') {
      const borrowed = names!
        .split(',')
        .map(
          (n) =>
            n
              .trim()
              .replace(/^type\s+/, '')
              .split(/\s+as\s+/)[0]!,
        )
        .filter((n) => n && !n.endsWith('Queries'));
      if (borrowed.length > 0)
        note(`${file}:${line}: takes ${borrowed.join(', ')} from a queries module (${target}); types live in model modules`);
    }
    if (file.startsWith('src/web/') && target.startsWith('src/oauth/'))
      note(`${file}:${line}: web imports oauth (${target}); the arrow runs oauth → web`);
    if (file.startsWith('plugins/') && !target.startsWith(`${file.split('/').slice(0, 2).join('/')}/`) && target !== KIT) {
      note(`${file}:${line}: a plugin imports ${target}; plugins use only the plugin kit (${KIT})`);
    }
  }
  const edges: Edge[] = [];
  for (const match of text.matchAll(importPattern)) {
    const spec = (match[1] ?? match[2])!;
    const line = text.slice(0, match.index + match[0].indexOf(spec)).split('\n').length;
    edges.push({ to: normalize(join(dirname(file), spec)), line });
  }
  graph.set(file, edges);
}

// Imports that run back up.
for (const [file, edges] of graph) {
  const from = layerOf(file);
  for (const { to, line } of edges) {
    const target = layerOf(to);
    if (target <= from || target < 0 || from < 0) continue;
    note(`${file}:${line}: an import runs back up: ${LAYERS[from]!.name} → ${LAYERS[target]!.name} (${to})`);
  }
}

// Circles: a depth-first search; each circle is reported once, from its first module in path order.
const seen = new Set<string>();
const onPath: string[] = [];
const circles = new Set<string>();
function visit(file: string): void {
  const at = onPath.indexOf(file);
  if (at >= 0) {
    const circle = onPath.slice(at);
    const start = circle.indexOf([...circle].sort()[0]!);
    const key = [...circle.slice(start), ...circle.slice(0, start)];
    const text = `circle: ${[...key, key[0]].join(' → ')}`;
    if (!circles.has(text)) {
      circles.add(text);
      problems.push(text);
    }
    return;
  }
  if (seen.has(file)) return;
  onPath.push(file);
  for (const { to } of graph.get(file) ?? []) if (graph.has(to)) visit(to);
  onPath.pop();
  seen.add(file);
}
for (const file of [...graph.keys()].sort()) visit(file);

if (problems.length > 0) {
  process.stderr.write(
    `Layers run one way (${LAYERS.map((l) => l.name)
      .reverse()
      .join(' → ')}), with no circle:\n${problems.map((p) => `  ${p}`).join('\n')}\n`,
  );
  process.exit(1);
}
process.stdout.write('layers: ok\n');
