/** What both codegen scripts share: the admin API's SDL as they read it, and writing or checking the output. */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { buildSchema, parse, printSchema, type DocumentNode } from 'graphql';

/** The schema of graphql/*.graphql, in file-name order, as one parsed document. */
export function adminSchema(): DocumentNode {
  const sdl = readdirSync('graphql')
    .filter((f) => f.endsWith('.graphql'))
    .sort()
    .map((f) => readFileSync(`graphql/${f}`, 'utf8'))
    .join('\n');
  return parse(printSchema(buildSchema(sdl)));
}

/** Writes `output` to `out`; with `--check`, fails instead when the committed file differs. */
export function writeOrCheck(out: string, output: string): void {
  if (process.argv.includes('--check')) {
    if (!existsSync(out) || readFileSync(out, 'utf8') !== output) {
      process.stderr.write(`${out} is stale: run npm run codegen\n`);
      process.exit(1);
    }
  } else {
    writeFileSync(out, output);
  }
}
