import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GROUPS, PEOPLE } from '../test/fixtures/ldap/directory.ts';
import { startSlapd, type Slapd } from '../test/helpers/slapd.ts';

export interface LargeDirectory {
  slapd: Slapd;
  users: number;
  groups: number;
  /** Seconds slapadd took to load it (offline). */
  loadSeconds: number;
}

/** Groups 0 … TOP-1 are departments; every other group is a member of one of them (one level of nesting). */
const TOP = 100;

const pad = (n: number) => String(n).padStart(6, '0');
export const benchGroupName = (g: number) => `sync-group-${pad(g)}`;
export const benchUserName = (i: number) => `sync-user-${pad(i)}`;

/**
 * The user's two direct groups. Every group gets about `2 × users / groups` members; with the
 * departments above, every user has up to four groups once nesting is resolved.
 */
export const directGroupsOf = (i: number, groups: number): number[] => [i % groups, (i * 7 + 1) % groups];

/**
 * The test suite's throwaway slapd (test/helpers/slapd.ts) with `users` more people in `groups` more
 * groups of names, loaded offline with slapadd (over LDAP, 100,000 adds take minutes). The service
 * account may read them all (slapd's own default stops any search at 500 entries), and the database
 * may grow past the helper's 100 MB. Its temp dirs go inside `workDir` (TMPDIR is read at each call),
 * where the bench's cleanup removes them.
 */
export async function startLargeDirectory(workDir: string, users: number, groups: number): Promise<LargeDirectory> {
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = workDir;
  let slapd: Slapd;
  try {
    slapd = await startSlapd({ serviceSizeLimit: 'unlimited' });
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
  const dir = readdirSync(workDir).find((d) => d.startsWith('latchkey-slapd-'));
  if (!dir) throw new Error(`no slapd directory in ${workDir}`);
  const conf = join(workDir, dir, 'slapd.conf');
  writeFileSync(conf, readFileSync(conf, 'utf8').replace(/^maxsize \d+$/m, `maxsize ${8 * 2 ** 30}`));

  const ldif = join(workDir, 'large-directory.ldif');
  writeFileSync(ldif, largeLdif(users, groups));
  await slapd.stop();
  const t0 = performance.now();
  execFileSync('slapadd', ['-q', '-f', conf, '-l', ldif], { stdio: 'pipe' });
  const loadSeconds = (performance.now() - t0) / 1000;
  await slapd.start();
  return { slapd, users, groups, loadSeconds };
}

/** The LDIF of the people and groups, written as one string (about 40 MB for 100,000 users); slapadd makes their entryUUIDs. */
function largeLdif(users: number, groups: number): string {
  const members: string[][] = Array.from({ length: groups }, () => []);
  const parts: string[] = [];
  for (let i = 0; i < users; i++) {
    const uid = benchUserName(i);
    const dn = `uid=${uid},${PEOPLE}`;
    for (const g of directGroupsOf(i, groups)) members[g]!.push(dn);
    parts.push(
      `dn: ${dn}\nobjectClass: inetOrgPerson\nuid: ${uid}\ncn: Sync User ${i}\nsn: User ${i}\nmail: ${uid}@example.org\nemployeeNumber: ${i}\ndepartmentNumber: ${benchGroupName(i % TOP)}\n`,
    );
  }
  for (let g = TOP; g < groups; g++) members[g % TOP]!.push(`cn=${benchGroupName(g)},${GROUPS}`);
  for (let g = 0; g < groups; g++) {
    const cn = benchGroupName(g);
    // groupOfNames must have a member: a group no user landed in (a small run) lists itself, a cycle.
    if (members[g]!.length === 0) members[g]!.push(`cn=${cn},${GROUPS}`);
    parts.push(`dn: cn=${cn},${GROUPS}\nobjectClass: groupOfNames\ncn: ${cn}\n${members[g]!.map((m) => `member: ${m}\n`).join('')}`);
  }
  return `${parts.join('\n')}\n`;
}
