import type { z } from 'zod';

/** The place of a path for a message: an entry of a list (a backend, an upstream) is named by its id too. */
function placeOf(root: unknown, path: PropertyKey[], prefix: string): string {
  let node = root;
  for (const key of path) node = (node as Record<PropertyKey, unknown> | undefined)?.[key];
  const id = (node as { id?: unknown } | undefined)?.id;
  const place = [prefix, ...path.map(String)].filter(Boolean).join('.');
  return typeof id === 'string' ? `${place} (id "${id}")` : place;
}

/**
 * One line per fault in a configuration, each naming its key. An unknown key gets a line of its own
 * with the place it stands (docs/configuration.md "Unknown keys are refused"): a typo must never pass as a setting
 * turned off.
 */
export function describeIssues(issues: readonly z.core.$ZodIssue[], root: unknown, prefix = '', rootName = 'the top level'): string[] {
  return issues.flatMap((i) => {
    const key = [prefix, ...i.path.map(String)].filter(Boolean).join('.');
    if (i.code !== 'unrecognized_keys') return [`${key || '(root)'}: ${i.message}`];
    const place = i.path.length || prefix ? `in ${placeOf(root, i.path, prefix)}` : `at ${rootName}`;
    return i.keys.map((k) => `${[key, k].filter(Boolean).join('.')}: unknown key ${place}`);
  });
}
