import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's folder (where package.json is), found from this module's own place: the same answer
 * whether the server runs from the TypeScript sources or from the bundle in dist/.
 */
function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the project folder (no package.json above the server)');
    dir = up;
  }
  return dir;
}

export const projectRoot = findRoot();
