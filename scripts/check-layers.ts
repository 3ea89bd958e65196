/**
 * Keeps the layers running one way (STYLE.md "The house"): HTTP → services → queries → database.
 * Run by `npm test`. Fails, naming file and line, when
 *  - SQL is built or run outside a queries module (`*queries.ts`) or `src/db/`;
 *  - a route, resolver or page imports a queries module (types excepted: they are the data's shape);
 *  - a queries module imports anything of HTTP.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'generated' || name === 'node_modules' ? [] : files(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const isQueries = (file: string) => /(^|[/-])queries\.ts$/.test(file);
const isDb = (file: string) => file.startsWith('src/db/');
/** Routes, resolvers, pages and the HTTP plumbing: the outermost layer. */
const isHttp = (file: string) =>
  /^src\/(oauth|oidc|ops|http|admin)\//.test(file) || file === 'src/app.ts' || /route\.ts$/.test(file) || file === 'src/login/passport.ts';

const sql = /\b(db|trx|knex)\s*\(|\b(db|trx|knex)\.(raw|transaction|schema|migrate|select|from|insert|update)\b/;
const valueImport = /^import\s+(?!type\b)[^;]*from\s+'([^']+)'/;
const problems: string[] = [];

for (const path of [...files(join(root, 'src')), ...files(join(root, 'plugins'))]) {
  const file = relative(root, path);
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((line, i) => {
    const where = `${file}:${i + 1}`;
    const code = line.replace(/\/\/.*$/, '');
    if (!isQueries(file) && !isDb(file) && sql.test(code)) problems.push(`${where}: SQL outside a queries module: ${line.trim()}`);
    const imported = valueImport.exec(line)?.[1];
    if (!imported) return;
    if (isHttp(file) && /queries\.ts$/.test(imported)) problems.push(`${where}: the HTTP layer imports a queries module (${imported}); go through a service`);
    if (isQueries(file) && (imported === 'express' || /\/(oauth|admin|http)\//.test(imported))) problems.push(`${where}: a queries module imports HTTP (${imported})`);
  });
}

if (problems.length > 0) {
  process.stderr.write(`Layers run one way (HTTP → services → queries → database):\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  process.exit(1);
}
process.stdout.write('layers: ok\n');
