import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from '@jest/globals';

/**
 * docs/development.md, "The house": code comments cite docs/ pages, with the quoted heading or row where
 * one helps (`docs/decisions.md "Outbound fetches"`). This holds every such citation to a page that
 * exists and a quote that is on it, so that a page edited or renamed cannot leave comments pointing at
 * nothing, and refuses a section number after a page name (the page, a comma, a number): the pages
 * have no numbered sections, and a number is a citation of some other document.
 */

const root = new URL('../../', import.meta.url);
const rootPath = root.pathname;
const FOLDERS = ['src', 'plugins', 'scripts', 'test', 'bench', 'migrations', 'console/src', 'graphql'];
const SOURCE = /\.(ts|tsx|mjs|js|graphql)$/;

function sources(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' || name === 'generated' ? [] : sources(path);
    return SOURCE.test(name) ? [path] : [];
  });
}

/** The text with comment continuations joined (`\n * ` and `\n // ` become a space), so a quote may span lines. */
const joined = (text: string) => text.replace(/\s*\n\s*(\*(?!\/)|\/\/)?\s*/g, ' ');
/** Case and spacing apart, the same words. */
const plain = (text: string) => text.replace(/[`*]/g, '').replace(/\s+/g, ' ').toLowerCase();

interface Citation {
  file: string;
  page: string;
  quote?: string;
  section?: string;
}

function citations(): Citation[] {
  const files = FOLDERS.flatMap((folder) => sources(join(rootPath, folder)));
  return files.flatMap((path) => {
    const text = joined(readFileSync(path, 'utf8'));
    const file = path.slice(rootPath.length);
    return [...text.matchAll(/docs\/([a-z0-9-]+\.md)(?:'s)?(?:,?\s*\(?\\?"([^"\\]{1,100})\\?"|,\s*(§?\s*\d[\d.]*)\b)?/g)].map((m) => ({
      file,
      page: `docs/${m[1]}`,
      quote: m[2],
      section: m[3],
    }));
  });
}

describe('citations of the manual in the code', () => {
  const all = citations();

  test('the code cites the manual', () => {
    expect(all.length).toBeGreaterThan(50);
  });

  test('every cited page exists, and every quoted heading or row is on it', () => {
    const pages = new Map<string, string>();
    const read = (page: string) => {
      if (!pages.has(page)) pages.set(page, existsSync(new URL(page, root)) ? plain(readFileSync(new URL(page, root), 'utf8')) : '');
      return pages.get(page)!;
    };
    const broken = all.flatMap((c) => {
      const text = read(c.page);
      if (!text) return [`${c.file}: ${c.page} does not exist`];
      if (c.quote && !text.includes(plain(c.quote))) return [`${c.file}: ${c.page} has no "${c.quote}"`];
      return [];
    });
    expect(broken).toEqual([]);
  });

  test('no citation names a section number', () => {
    const numbered = all
      .filter((c) => c.section)
      .map((c) => `${c.file}: ${c.page}, ${c.section}: cite the heading or row instead, in quotes`);
    expect(numbered).toEqual([]);
  });
});
