import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Attribute, Change, Client } from 'ldapts';
import {
  entryUuid,
  groupDn,
  groups,
  objectGuid,
  people,
  PEOPLE,
  personDn,
  toLdif,
  type LdifEntry,
} from '../test/fixtures/ldap/directory.ts';
import type { Slapd } from '../test/helpers/slapd.ts';

export interface DirectoryUser {
  uid: string;
  dn: string;
  password: string;
}

/** The helper's slapd dir (its config and data), inside the bench's work dir (see ldap.ts). */
function slapdConf(workDir: string): { file: string; rootDn: string; rootPassword: string } {
  const dir = readdirSync(workDir).find((d) => d.startsWith('latchkey-slapd-'));
  if (!dir) throw new Error(`no slapd directory in ${workDir}`);
  const file = join(workDir, dir, 'slapd.conf');
  const conf = readFileSync(file, 'utf8');
  // The helper does not export its root credentials: read them where it wrote them.
  const rootDn = /^rootdn\s+"?([^"\n]+?)"?\s*$/m.exec(conf)?.[1];
  const rootPassword = /^rootpw\s+(\S+)\s*$/m.exec(conf)?.[1];
  if (!rootDn || !rootPassword) throw new Error(`${file}: no rootdn/rootpw`);
  return { file, rootDn, rootPassword };
}

/**
 * `count` directory users shaped exactly like the fixture's alice: the same object classes, the same
 * groups (as `member` of the group entries and as `memberOf`), their own entryUUID and objectGUID.
 * Why: the fixture has three usable people, and the password grant is driven with one account per
 * connection (see rotatingBodiesScript). memberOf and entryUUID cannot be written over LDAP (they are
 * operational), so the entries are loaded offline with slapadd as the helper loads the fixture: slapd
 * is stopped for that and started again on the same ports. The groups then gain their new members
 * online, as the directory's root.
 */
export async function addDirectoryUsers(slapd: Slapd, workDir: string, count: number): Promise<DirectoryUser[]> {
  const alice = personDn(people.alice);
  const aliceGroups = Object.entries(groups)
    .filter(([, members]) => members.includes(alice))
    .map(([cn]) => groupDn(cn));
  const users = Array.from({ length: count }, (_, i) => {
    const uid = `bench-ldap-${String(i).padStart(2, '0')}`;
    return { uid, dn: `uid=${uid},${PEOPLE}`, password: `${uid}-directory-pw` };
  });
  const entries: LdifEntry[] = users.map((u) => ({
    dn: u.dn,
    attrs: {
      objectClass: ['inetOrgPerson', 'latchkeyAdUser'],
      uid: u.uid,
      cn: `Bench ${u.uid}`,
      sn: u.uid,
      mail: `${u.uid}@example.org`,
      userPassword: u.password,
      sAMAccountName: u.uid,
      objectGUID: objectGuid(u.uid),
      userAccountControl: '512',
      entryUUID: entryUuid(u.uid),
      memberOf: aliceGroups,
    },
  }));
  const conf = slapdConf(workDir);
  const ldif = join(workDir, 'bench-directory-users.ldif');
  writeFileSync(ldif, toLdif(entries));
  await slapd.stop();
  execFileSync('slapadd', ['-q', '-f', conf.file, '-l', ldif], { stdio: 'pipe' });
  await slapd.start();

  const client = new Client({ url: slapd.url, timeout: 5000 });
  try {
    await client.bind(conf.rootDn, conf.rootPassword);
    for (const group of aliceGroups) {
      await client.modify(
        group,
        new Change({ operation: 'add', modification: new Attribute({ type: 'member', values: users.map((u) => u.dn) }) }),
      );
    }
  } finally {
    await client.unbind();
  }
  return users;
}
