// The resolve hook of module-log.mjs: each import that resolves into an @opentelemetry package.
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (resolved.url.includes('@opentelemetry')) appendFileSync(file, `import ${resolved.url}\n`);
  return resolved;
}
