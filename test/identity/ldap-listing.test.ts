import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pino from 'pino';
import plugin from '../../plugins/ldap/index.ts';
import { BackendUnavailableError, type Identity, type IdentityBackend } from '../../src/identity/plugin-kit.ts';
import { GROUPS, PEOPLE, people, personDn } from '../fixtures/ldap/directory.ts';
import { ldapBackendConfig, startSlapd, type Slapd } from '../helpers/slapd.ts';

/**
 * The LDAP backend's side of directory sync (docs/directory-sync.md, "Reading the directory") against a
 * real slapd: every user exactly as a sign-in sees them, and never a short list.
 */
const backends: IdentityBackend[] = [];
async function backend(slapd: Slapd, extra: Record<string, unknown> = {}): Promise<IdentityBackend> {
  const b = await plugin.create(
    plugin.configSchema.parse(ldapBackendConfig(slapd, { extraAttributes: ['employeeNumber', 'departmentNumber'], ...extra })),
    {
      id: 'corp',
      logger: pino({ level: 'silent' }),
      db: undefined as never,
      localUsers: undefined as never,
    },
  );
  backends.push(b);
  return b;
}

async function listAll(b: IdentityBackend): Promise<Identity[]> {
  const all: Identity[] = [];
  for await (const batch of b.sync!.listUsers()) all.push(...batch);
  return all;
}

const byName = (list: Identity[]) => new Map(list.map((u) => [u.username, u]));
const sorted = (groups: string[] | undefined) => [...(groups ?? [])].sort();

/** What a listing threw; fails when it did not throw. */
async function listingError(b: IdentityBackend, consume: (batch: Identity[], n: number) => Promise<void> = async () => {}): Promise<Error> {
  let n = 0;
  try {
    for await (const batch of b.sync!.listUsers()) await consume(batch, n++);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`the listing ended without an error after ${n} batches`);
}

afterAll(async () => {
  await Promise.all(backends.map((b) => b.close?.()));
});

describe('the LDAP backend lists the whole directory', () => {
  let slapd: Slapd;
  beforeAll(async () => {
    slapd = await startSlapd({ ppolicy: true });
  });
  afterAll(async () => {
    await slapd?.destroy();
  });

  test('every user, each exactly as a sign-in sees them: attributes, groups through nesting (cycles cut), roles, account state', async () => {
    const b = await backend(slapd, { sync: { pageSize: 2 } });
    const listed = byName(await listAll(b));
    expect([...listed.keys()].sort()).toEqual(
      Object.values(people)
        .map((p) => p.uid)
        .sort(),
    );
    for (const p of [people.alice, people.bob, people.special]) {
      const signIn = (await b.checkPassword(p.uid, p.password)).identity!;
      expect({ ...listed.get(p.uid), groups: sorted(listed.get(p.uid)!.groups) }).toEqual({ ...signIn, groups: sorted(signIn.groups) });
    }
    expect(listed.get('alice')).toMatchObject({
      roles: ['admin'],
      attributes: { employeeNumber: '1001', departmentNumber: 'Sales' },
      disabled: false,
    });
    expect(sorted(listed.get('bob')!.groups)).toEqual(['engineers', 'loop-a', 'loop-b', 'staff']);
    expect(listed.get('bob')!.attributes).toEqual({ employeeNumber: '1002', departmentNumber: ['Engineering', 'Research'] });
    // Listed as a member with other escapes than its own DN has (`\,` against `\2C`): the same entry.
    expect(listed.get(people.special.uid)!.groups).toEqual(['Ops, Night (24*7)']);
  });

  test('nesting `none` gives direct groups only; without groupSearch, the memberOf values', async () => {
    const direct = byName(await listAll(await backend(slapd, { groupSearch: { baseDN: GROUPS, nested: 'none' } })));
    expect(sorted(direct.get('bob')!.groups)).toEqual(['engineers', 'loop-a']);
    const memberOf = byName(await listAll(await backend(slapd, { groupSearch: undefined })));
    expect(sorted(memberOf.get('alice')!.groups)).toEqual(['latchkey-admins', 'staff']);
    expect(memberOf.get('alice')!.roles).toEqual(['admin']);
  });

  test('an account an administrator locked (ppolicy pwdAccountLockedTime) is listed disabled; AD userAccountControl too', async () => {
    await slapd.modify(personDn(people.alice), 'pwdAccountLockedTime', ['000001010000Z']);
    try {
      const listed = byName(await listAll(await backend(slapd)));
      expect(listed.get('alice')).toMatchObject({ disabled: true, refusal: 'disabled' });
      expect(listed.get('bob')).toMatchObject({ disabled: false });
      expect(listed.get('carol')).toMatchObject({ disabled: true, refusal: 'disabled' }); // userAccountControl 514
    } finally {
      await slapd.modify(personDn(people.alice), 'pwdAccountLockedTime', []);
    }
  });

  test('whatever userSearch.filter excludes is not listed; an entry without the id attribute fails the listing, naming it', async () => {
    const filtered = byName(
      await listAll(
        await backend(slapd, { userSearch: { baseDN: PEOPLE, filter: '(&(objectClass=inetOrgPerson)(uid={username})(!(uid=carol)))' } }),
      ),
    );
    expect(filtered.has('carol')).toBe(false);
    expect(filtered.has('bob')).toBe(true);
    // Only alice and bob have an employeeNumber: the others' records would look gone, so the pass must
    // fail rather than make them leavers.
    const withoutId = await listingError(
      await backend(slapd, { userSearch: { baseDN: PEOPLE, filter: '(uid={username})', idAttr: 'employeeNumber' } }),
    );
    expect(withoutId).toBeInstanceOf(BackendUnavailableError);
    expect((withoutId as Error).message).toMatch(/lack employeeNumber or uid \(first: uid=/);
    const onlyNumbered = await listAll(
      await backend(slapd, { userSearch: { baseDN: PEOPLE, filter: '(&(employeeNumber=*)(uid={username}))', idAttr: 'employeeNumber' } }),
    );
    expect(onlyNumbered.map((u) => [u.username, u.externalId]).sort()).toEqual([
      ['alice', '1001'],
      ['bob', '1002'],
    ]);
  });

  test('of two values of usernameAttr, the first', async () => {
    await slapd.modify(personDn(people.bob), 'uid', ['bob', 'bobby']);
    try {
      const listed = await listAll(await backend(slapd));
      expect(listed.map((u) => u.username).filter((n) => n.startsWith('bob'))).toEqual(['bob']);
    } finally {
      await slapd.modify(personDn(people.bob), 'uid', ['bob']);
    }
  });

  test('a typo in a base DN throws, naming it, instead of listing nobody', async () => {
    const users = await listingError(
      await backend(slapd, { userSearch: { baseDN: `ou=peple,${PEOPLE.split(',').slice(1).join(',')}`, filter: '(uid={username})' } }),
    );
    expect(users).toBeInstanceOf(BackendUnavailableError);
    expect(users.message).toMatch(/userSearch\.baseDN "ou=peple,dc=example,dc=org" does not exist/);
    const groups = await listingError(await backend(slapd, { groupSearch: { baseDN: `ou=grups,dc=example,dc=org` } }));
    expect(groups).toBeInstanceOf(BackendUnavailableError);
    expect(groups.message).toMatch(/groupSearch\.baseDN "ou=grups,dc=example,dc=org" does not exist/);
  });

  test('a listing holds no pooled connection: sign-ins go on between its pages, even with poolSize 1', async () => {
    const b = await backend(slapd, { poolSize: 1, sync: { pageSize: 1 } });
    let seen = 0;
    for await (const batch of b.sync!.listUsers()) {
      seen += batch.length;
      expect((await b.checkPassword('bob', people.bob.password)).validPassword).toBe(true);
    }
    expect(seen).toBe(Object.keys(people).length);
  });

  test('a server that is down when the listing starts is passed over for the next of `url`', async () => {
    const b = await backend(slapd, { url: ['ldap://127.0.0.1:1', slapd.url] });
    expect((await listAll(b)).map((u) => u.username).sort()).toEqual(
      Object.values(people)
        .map((p) => p.uid)
        .sort(),
    );
  });

  test('a directory that hangs mid-listing throws after one page timeout, not a short list', async () => {
    const b = await backend(slapd, { timeoutMs: 500, sync: { pageSize: 1 } });
    const started = Date.now();
    const err = await listingError(b, async (_, n) => {
      if (n === 0) slapd.pause();
    });
    slapd.resume();
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect(err.message).toMatch(/could not read every entry of userSearch/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test('a directory that stops mid-listing throws, not a short list', async () => {
    const b = await backend(slapd, { sync: { pageSize: 1 } });
    let seen = 0;
    const err = await listingError(b, async (batch, n) => {
      seen += batch.length;
      if (n === 0) await slapd.stop();
    });
    await slapd.start();
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect(seen).toBeLessThan(Object.keys(people).length);
  });
});

describe('a directory that would answer only part of the listing', () => {
  test("the service account's size limit (sizeLimitExceeded) throws, saying so", async () => {
    const slapd = await startSlapd({ serviceSizeLimit: 2 });
    try {
      const err = await listingError(await backend(slapd, { groupSearch: undefined }));
      expect(err).toBeInstanceOf(BackendUnavailableError);
      expect(err.message).toMatch(/size limit/);
    } finally {
      await slapd.destroy();
    }
  });

  test('a referral in the user subtree, which Latchkey does not follow, throws', async () => {
    const slapd = await startSlapd();
    try {
      await slapd.add({
        dn: `ou=elsewhere,${PEOPLE}`,
        attrs: { objectClass: ['referral', 'extensibleObject'], ou: 'elsewhere', ref: `ldap://directory.invalid/ou=elsewhere,${PEOPLE}` },
      });
      const err = await listingError(await backend(slapd));
      expect(err).toBeInstanceOf(BackendUnavailableError);
      expect(err.message).toMatch(/referred part of userSearch\.baseDN to ldap:\/\/directory\.invalid/);
    } finally {
      await slapd.destroy();
    }
  });
});
