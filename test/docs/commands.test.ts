import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, test } from '@jest/globals';

/**
 * docs/development.md, "The manual": every shell command a page shows is either run by a test or marked
 * as an example. A fenced block in a shell language (or with no language at all) must be one of the
 * blocks below, each with what runs it, or carry `example` after its language (```sh example): the
 * reader runs it on their own machine, and no test does.
 */

const root = new URL('../../', import.meta.url);

/** Shell languages; a block without a language is taken for one, so that nothing slips through unlabelled. */
const SHELL = new Set(['', 'sh', 'bash', 'shell', 'console', 'zsh', 'shell-session', 'shellsession']);

/**
 * The shell blocks tests run, found by their page, the heading above them and their first command.
 * `runners` are the files that run them, each with a string it must contain (the page it reads, or the
 * command itself), so that a runner that stops reading the page fails here too.
 */
const runByTests: Array<{
  file: string;
  heading: string;
  starts: string;
  runners: Array<{ file: string; contains: string }>;
  how: string;
}> = [
  {
    file: 'docs/connect-an-application.md',
    heading: 'Command-line tools',
    starts: 'curl -s -d client_id=$CLIENT_ID',
    runners: [{ file: 'test/oauth/device-grant.test.ts', contains: 'docs/connect-an-application.md' }],
    how: 'sends both curl requests as printed, with LATCHKEY, CLIENT_ID and DEVICE_CODE filled in',
  },
  {
    file: 'README.md',
    heading: 'Quick start',
    starts: 'npm ci && npm start',
    runners: [
      { file: '.ci/run', contains: 'npm test' },
      { file: 'test/startup.test.ts', contains: 'scripts/start.mjs' },
    ],
    how: '.ci/run runs `npm ci` and `npm test` on a fresh machine; test/startup.test.ts starts scripts/start.mjs, which `npm start` runs',
  },
];

interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  language: string;
  example: boolean;
  heading: string;
  /** The first line that is not a comment. */
  first: string;
}

/** The pages a reader follows: README.md, docs/*.md and bench/README.md. */
function pages(): string[] {
  const docs = readdirSync(new URL('docs/', root))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs.sort(), 'bench/README.md'];
}

/** Every fenced block of a Markdown text, with its language, its `example` mark and the heading above it. */
function fencedBlocks(file: string, text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split('\n');
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*(.*)$/.exec(lines[i]!);
    if (!open) {
      const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(lines[i]!);
      if (h) heading = h[1]!;
      continue;
    }
    const fence = open[1]!;
    const [language = '', ...words] = open[2]!.trim().split(/\s+/).filter(Boolean);
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !new RegExp(`^ {0,3}${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`).test(lines[j]!))
      body.push(lines[j++]!);
    const first = body.map((l) => l.trim()).find((l) => l && !l.startsWith('#')) ?? '';
    blocks.push({ file, line: i + 1, language: language.toLowerCase(), example: words.includes('example'), heading, first });
    i = j;
  }
  return blocks;
}

const allBlocks = () => pages().flatMap((file) => fencedBlocks(file, readFileSync(new URL(file, root), 'utf8')));
const isKnown = (b: Block) => runByTests.find((k) => k.file === b.file && k.heading === b.heading && b.first.startsWith(k.starts));

describe('shell commands in the manual', () => {
  test('every shell block is run by a test or marked as an example', () => {
    const unaccounted = allBlocks()
      .filter((b) => SHELL.has(b.language) && !b.example && !isKnown(b))
      .map((b) =>
        b.language
          ? `${b.file}:${b.line}: a \`${b.language}\` block under "${b.heading}" that no test runs: mark it \`\`\`${b.language} example, or list it in test/docs/commands.test.ts with the test that runs it`
          : `${b.file}:${b.line}: a block without a language under "${b.heading}": give it one (\`\`\`text when it holds no commands)`,
      );
    expect(unaccounted).toEqual([]);
  });

  test('every block listed as run by a test is on its page, and its runners still read it', () => {
    const blocks = allBlocks();
    for (const known of runByTests) {
      const found = blocks.filter((b) => b.file === known.file && b.heading === known.heading && b.first.startsWith(known.starts));
      expect([known.file, known.heading, found.length]).toEqual([known.file, known.heading, 1]);
      expect(found[0]!.example).toBe(false);
      for (const runner of known.runners) {
        const path = new URL(runner.file, root);
        expect([runner.file, existsSync(path)]).toEqual([runner.file, true]);
        expect(readFileSync(path, 'utf8')).toContain(runner.contains);
      }
    }
  });

  test('the parser finds blocks, languages, marks and headings', () => {
    const text = [
      '# Page',
      '',
      '## Setup',
      '',
      '```sh example',
      'npm ci',
      '```',
      '',
      '```',
      'plain',
      '```',
      '',
      '````md',
      '```sh',
      'inner',
      '```',
      '````',
    ].join('\n');
    expect(fencedBlocks('x.md', text)).toEqual([
      { file: 'x.md', line: 5, language: 'sh', example: true, heading: 'Setup', first: 'npm ci' },
      { file: 'x.md', line: 9, language: '', example: false, heading: 'Setup', first: 'plain' },
      { file: 'x.md', line: 13, language: 'md', example: false, heading: 'Setup', first: '```sh' },
    ]);
  });
});
