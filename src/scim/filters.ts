/**
 * List filters (RFC 7644 §3.4.2.2), parsed and evaluated by scim2-parse-filter (docs/decisions.md
 * "SCIM libraries"). The `eq` filters that Entra ID and Okta send before every create (`userName`,
 * `externalId`, `id`, `displayName`) narrow the candidates in SQL; every filter is then evaluated in
 * memory over the candidates' full representations, so SQL only ever narrows, never decides.
 */
import { parse, Tester, type Filter } from 'scim2-parse-filter';
import { scimErrors } from './errors.ts';
import type { ScimDocument } from './model.ts';
import { resolvePath, UNKNOWN_EXTENSION } from './paths.ts';
import type { ResourceSchemas } from './schemas.ts';

/** The SQL-narrowable part of a filter: one `eq` on an indexed attribute. */
export interface Narrowing {
  attribute: 'userName' | 'externalId' | 'id' | 'displayName';
  value: string;
}

export interface ParsedFilter {
  filter: Filter;
  narrowing?: Narrowing;
}

const MAX_FILTER = 4096;

/** Attribute paths in the schema's spelling, the core URN dropped (the evaluator reads plain keys). */
function canonical(rs: ResourceSchemas, path: string, inside?: string): string {
  let resolved: ReturnType<typeof resolvePath>;
  try {
    resolved = resolvePath(rs, inside ? `${inside}.${path}` : path);
  } catch {
    // An attribute the schema lacks matches nothing; the evaluator finds no such key.
    return path;
  }
  if (resolved === UNKNOWN_EXTENSION) return path;
  if (!inside) return resolved.canonical;
  return resolved.sub?.name ?? path;
}

function rewrite(rs: ResourceSchemas, f: Filter, inside?: string): Filter {
  switch (f.op) {
    case 'and':
    case 'or': {
      const filters = f.filters.map((x) => rewrite(rs, x, inside));
      // `emails[type eq "work"].value eq "x"` is parsed as the value path AND `emails.value eq "x"`:
      // read it as RFC 7644 §3.10 means it, one work email whose value is x.
      if (f.op === 'and' && filters.length === 2) {
        const [vp, cmp] = filters;
        if (
          vp?.op === '[]' &&
          cmp &&
          cmp.op !== '[]' &&
          'attrPath' in cmp &&
          cmp.attrPath.toLowerCase().startsWith(`${vp.attrPath.toLowerCase()}.`)
        ) {
          const sub = cmp.attrPath.slice(vp.attrPath.length + 1);
          return { op: '[]', attrPath: vp.attrPath, valFilter: { op: 'and', filters: [vp.valFilter, { ...cmp, attrPath: sub }] } };
        }
      }
      return { op: f.op, filters };
    }
    case 'not':
      return { op: 'not', filter: rewrite(rs, f.filter, inside) };
    case '[]': {
      const attrPath = canonical(rs, f.attrPath, inside);
      return { op: '[]', attrPath, valFilter: rewrite(rs, f.valFilter, attrPath) };
    }
    default:
      return { ...f, attrPath: canonical(rs, f.attrPath, inside) };
  }
}

const NARROWING: Record<string, Narrowing['attribute']> = {
  username: 'userName',
  externalid: 'externalId',
  id: 'id',
  displayname: 'displayName',
};

/** The first `eq` on an indexed attribute that every match must satisfy (the filter itself, or one side of an `and`). */
function narrowing(f: Filter): Narrowing | undefined {
  if (f.op === 'eq' && typeof f.compValue === 'string') {
    const attribute = NARROWING[f.attrPath.toLowerCase()];
    return attribute ? { attribute, value: f.compValue } : undefined;
  }
  if (f.op === 'and')
    for (const x of f.filters) {
      const n = narrowing(x);
      if (n) return n;
    }
  return undefined;
}

/** A filter parameter: parsed, its paths in the schema's spelling; 400 invalidFilter when it is not one. */
export function parseFilter(rs: ResourceSchemas, text: string): ParsedFilter {
  if (text.length > MAX_FILTER) throw scimErrors.badRequest('invalidFilter', `a filter is at most ${MAX_FILTER} characters`);
  let parsed: Filter;
  try {
    parsed = parse(text);
  } catch (err) {
    throw scimErrors.badRequest('invalidFilter', `the filter is not valid: ${(err as Error).message}`);
  }
  const filter = rewrite(rs, parsed);
  return { filter, narrowing: narrowing(filter) };
}

/**
 * The value filter of a multi-valued attribute's path (`members[value eq "…"]`), already checked by
 * resolvePath: parsed, its sub-attribute names in the schema's spelling.
 */
export function parseValueFilter(rs: ResourceSchemas, attribute: string, text: string): Filter {
  return rewrite(rs, parse(text), attribute);
}

/**
 * The library's evaluator with SCIM's string rules: strings compare without case (userName,
 * emails and displayName are `caseExact: false`; ids are compared as written by the same server
 * that made them), and a dateTime compares as an instant.
 */
class ScimTester extends Tester {
  private static fold(v: unknown): unknown {
    return typeof v === 'string' ? v.toLowerCase() : v;
  }

  override eq(r: unknown, v: unknown): boolean {
    return ScimTester.fold(r) === ScimTester.fold(v);
  }

  override ne(r: unknown, v: unknown): boolean {
    return !this.eq(r, v);
  }

  override co(r: unknown, v: unknown): boolean {
    return typeof r === 'string' && typeof v === 'string' && r.toLowerCase().includes(v.toLowerCase());
  }

  override sw(r: unknown, v: unknown): boolean {
    return typeof r === 'string' && typeof v === 'string' && r.toLowerCase().startsWith(v.toLowerCase());
  }

  override ew(r: unknown, v: unknown): boolean {
    return typeof r === 'string' && typeof v === 'string' && r.toLowerCase().endsWith(v.toLowerCase());
  }

  override gt(r: unknown, v: unknown): boolean {
    return ScimTester.order(r, v) > 0;
  }

  override ge(r: unknown, v: unknown): boolean {
    return ScimTester.order(r, v) >= 0;
  }

  override lt(r: unknown, v: unknown): boolean {
    return ScimTester.order(r, v) < 0;
  }

  override le(r: unknown, v: unknown): boolean {
    return ScimTester.order(r, v) <= 0;
  }

  /** NaN (never true) when the two cannot be ordered: booleans, a value missing, a string against a number. */
  private static order(r: unknown, v: unknown): number {
    if (typeof r === 'number' && typeof v === 'number') return r - v;
    if (typeof r !== 'string' || typeof v !== 'string') return Number.NaN;
    const [dr, dv] = [Date.parse(r), Date.parse(v)];
    if (/^\d{4}-\d\d-\d\dT/.test(r) && !Number.isNaN(dr) && !Number.isNaN(dv)) return dr - dv;
    const [a, b] = [r.toLowerCase(), v.toLowerCase()];
    return a < b ? -1 : a > b ? 1 : 0;
  }
}

const tester = new ScimTester();

export const matches = (f: Filter, doc: ScimDocument): boolean => tester.test(doc, f);
