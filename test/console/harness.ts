/** What the console's tests share: a built console, Chromium, a signed-in page, and the checks run on every section. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from '@jest/globals';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../helpers/chromium.ts';
import { postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** `npm ci` and `npm start` build the console; a checkout edited since gets the same rebuild here. */
export function buildConsoleIfStale(): void {
  execFileSync(
    process.execPath,
    ['--input-type=module', '-e', "const b = await import('./scripts/build.mjs'); if (b.isConsoleStale()) await b.buildConsole();"],
    { stdio: 'inherit' },
  );
}

export const launch = launchChromium;

/**
 * A console suite's fixtures: the built console, a SQLite server and Chromium, started once before the
 * suite's tests and closed after them. Read `server` and `browser` inside the tests.
 */
export function consoleSuite(): { readonly server: TestServer; readonly browser: Browser } {
  let server: TestServer | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    buildConsoleIfStale();
    [server, browser] = await Promise.all([startTestServer('sqlite'), launch()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });
  return {
    get server() {
      return server!;
    },
    get browser() {
      return browser!;
    },
  };
}

export const widths = {
  desktop: { width: 1280, height: 860 },
  phone: { width: 390, height: 844 },
} as const;
export type Width = keyof typeof widths;

/** Screenshots go here (SCREENSHOT_DIR, or a folder in the temp dir), to be looked at. */
export const shots = process.env.SCREENSHOT_DIR ?? join(tmpdir(), 'latchkey-console-shots');
mkdirSync(shots, { recursive: true });

/** A browser context that notes every request its pages make. */
export async function watchedContext(browser: Browser, width: Width): Promise<{ context: BrowserContext; page: Page; requests: string[] }> {
  const context = await browser.newContext({ viewport: widths[width] });
  context.setDefaultTimeout(10_000);
  const requests: string[] = [];
  context.on('request', (r) => requests.push(r.url()));
  const page = await context.newPage();
  page.on('pageerror', (err) => requests.push(`pageerror: ${err.message}`));
  return { context, page, requests };
}

/** Every request went to the server's own origin (no CDN, no fonts, no analytics), and no script failed. */
export function expectOnlyOwnOrigin(server: TestServer, requests: string[]): void {
  const origin = new URL(server.url).origin;
  const foreign = requests.filter((u) => !u.startsWith('data:') && new URL(u, origin).origin !== origin);
  expect(foreign).toEqual([]);
  expect(requests.filter((u) => u.startsWith('pageerror'))).toEqual([]);
}

/** Opens /admin and signs in on the login page it leads to. */
export async function signIn(server: TestServer, page: Page, username: string, password: string): Promise<void> {
  await page.goto(`${server.url}/admin`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  expect(new URL(page.url()).pathname).toBe('/oauth/v20/authorize');
  await page.fill('input[name=username]', username);
  await page.fill('input[name=password]', password);
  await page.click('button[type=submit]');
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** What a person (and a screen reader) notices on a section: named controls, no sideways scroll at phone width, nothing stored. */
export async function checkSection(page: Page, name: string, width: Width): Promise<void> {
  // The page's CSP allows no inline script: axe is handed to the page through the debugging protocol.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run(ctx: Document, opts: unknown): Promise<{ violations: Array<{ id: string; nodes: Array<{ html: string }> }> }> };
      }
    ).axe;
    const result = await axe.run(document, {
      runOnly: { type: 'rule', values: ['label', 'button-name', 'link-name', 'select-name', 'aria-input-field-name'] },
    });
    return result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.html).join(' | ')}`);
  });
  expect(violations).toEqual([]);
  if (width === 'phone') {
    const overflow = await page.evaluate(() => document.scrollingElement!.scrollWidth - innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
  }
  const stored = await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length, cookies: document.cookie }));
  expect(stored).toEqual({ local: 0, session: 0, cookies: '' });
  await page.screenshot({ path: join(shots, `${name}-${width}.png`), fullPage: true });
  // What a phone shows first, readable without shrinking a long page.
  if (width === 'phone') await page.screenshot({ path: join(shots, `${name}-${width}-screen.png`) });
}

/** The token endpoint's status for a request. */
export const tokenStatus = async (server: TestServer, fields: Record<string, string>): Promise<number> =>
  (await postForm(`${server.url}/oauth/v20/token`, fields)).status;
