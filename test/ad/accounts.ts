import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Attribute, Change } from 'ldapts';
import type { DatabaseKind } from '../helpers/databases.ts';
import { Browser, exchangeCode, obtainCode } from '../helpers/flow.ts';
import { postForm } from '../helpers/http.ts';
import { AD_BASE_DN } from '../helpers/samba.ts';
import type { TestServer } from '../helpers/server.ts';
import { ALL_HANDS, GUS_TEAMS, people, personDn } from './directory.ts';
import { adConfig, dc, me, profileOf, refresh, Servers, signIn, type Tokens } from './harness.ts';

const sorted = (groups: string[]) => [...groups].sort();

/** What an AD customer's users see: their AD name, a userid anchored on objectGUID, AD's nested and large groups. */
export function accountTests(kind: DatabaseKind): void {
  describe(`AD accounts and groups on ${kind}`, () => {
    const servers = new Servers(kind);
    let server: TestServer;

    beforeAll(async () => {
      server = await servers.start(adConfig());
    });
    afterAll(() => servers.stopAll());

    test('users sign in with their sAMAccountName on the login page; the profile is the directory entry', async () => {
      const app = await server.client({ scopes: ['openid', 'profile', 'email', 'groups'] });
      const { code } = await obtainCode(new Browser(server), app, 'alice', people.alice.password, { scope: 'openid profile email groups' });
      const tokens = (await (await exchangeCode(server, app, code!)).json()) as Tokens;
      expect(await me(server, tokens.access_token)).toMatchObject({
        uid: 'alice',
        displayName: 'Alice Liddell',
        email: 'alice@latchkey.test',
      });
      // A name with filter metacharacters and non-ASCII, under a DN full of DN metacharacters.
      expect(await profileOf(server, people.special.sam, people.special.password)).toMatchObject({
        uid: people.special.sam,
        groups: ['Night, Ops (24*7)'],
      });
    });

    test("the userid is anchored on objectGUID (Windows' string form): a renamed account keeps it, its old name stops working", async () => {
      const ren = people.ren;
      const before = await profileOf(server, 'ren', ren.password);
      const { externalId } = (await server.ctx.users.find(before.userid))!;
      // AD finds an entry by that string as an extended DN: it is the entry's real objectGUID.
      const found = await dc().asAdmin((c) => c.search(`<GUID=${externalId}>`, { scope: 'base', attributes: ['sAMAccountName'] }));
      expect(found.searchEntries.map((e) => e.sAMAccountName)).toEqual(['ren']);

      const rename = (from: string, sam: string, cn: string) =>
        dc().asAdmin(async (c) => {
          await c.modify(
            from,
            new Change({ operation: 'replace', modification: new Attribute({ type: 'sAMAccountName', values: [sam] }) }),
          );
          await c.modifyDN(from, `CN=${cn}`);
        });
      await rename(personDn(ren), 'renata', 'Renata Renamed');
      try {
        const after = await profileOf(server, 'renata', ren.password);
        expect(after).toMatchObject({ userid: before.userid, uid: 'renata' });
        expect((await signIn(server, 'ren', ren.password)).body).toEqual({
          error: 'invalid_grant',
          error_description: 'invalid username or password',
        });
      } finally {
        await rename(personDn({ ...ren, cn: 'Renata Renamed' }), 'ren', ren.cn);
      }
    });

    test('an account that expires in the directory (accountExpires) stops refreshing its tokens', async () => {
      const p = people.bob;
      const first = await signIn(server, p.sam, p.password);
      expect(first.status).toBe(200);
      // accountExpires is a Windows FILETIME: 100 ns ticks since 1601; yesterday, then 0 (never) again.
      const yesterday = ((BigInt(Date.now() - 86_400_000) + 11_644_473_600_000n) * 10_000n).toString();
      const expires = (value: string) =>
        dc().asAdmin((c) =>
          c.modify(
            personDn(p),
            new Change({ operation: 'replace', modification: new Attribute({ type: 'accountExpires', values: [value] }) }),
          ),
        );
      await expires(yesterday);
      try {
        expect(await refresh(server, first.body.refresh_token!)).toEqual({
          status: 400,
          body: { error: 'invalid_grant', error_description: 'the user no longer exists or is disabled in their directory' },
        });
        expect(await signIn(server, p.sam, p.password)).toMatchObject({
          status: 400,
          body: { error_description: 'the account has expired' },
        });
      } finally {
        await expires('0');
      }
      expect((await signIn(server, p.sam, p.password)).status).toBe(200);
    });

    test('nested groups through the in-chain matching rule: bob is in Staff through Engineers', async () => {
      expect(sorted((await profileOf(server, 'bob', people.bob.password)).groups)).toEqual(['Engineers', 'Staff']);
    });

    test('adminGroups through nesting: alice, in IT Ops which is in Latchkey Admins, gets the admin API; bob does not', async () => {
      const usersCount = async (username: string, password: string) => {
        const token = await postForm(`${server.url}/oauth/v20/token`, {
          grant_type: 'password',
          client_id: 'admin-cli',
          username,
          password,
        });
        const { access_token } = (await token.json()) as Tokens;
        const res = await fetch(`${server.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${access_token}` },
          body: JSON.stringify({ query: '{ users { totalCount } }' }),
        });
        return { status: res.status, body: (await res.json()) as { data?: unknown; errors?: Array<{ extensions: { code: string } }> } };
      };
      const alice = await usersCount('alice', people.alice.password);
      expect(alice.status).toBe(200);
      expect(alice.body.data).toEqual({ users: { totalCount: expect.any(Number) } });
      expect(sorted((await profileOf(server, 'alice', people.alice.password)).groups)).toEqual(['IT Ops', 'Latchkey Admins', 'Staff']);
      const bob = await usersCount('bob', people.bob.password);
      expect([bob.status, bob.body.errors?.[0]?.extensions.code]).toEqual([403, 'FORBIDDEN']);
    });

    test(`a 1,601-member group, and a user in ${GUS_TEAMS} groups (more than a page) and in the big one through them`, async () => {
      // Groups searched from the domain root, as docs/identity-backends.md's example does.
      const wholeDomain = await servers.start(
        adConfig({ groupSearch: { baseDN: AD_BASE_DN, filter: '(objectClass=group)', nested: 'matchingRule' } }),
      );
      expect(sorted((await profileOf(wholeDomain, 'bob', people.bob.password)).groups)).toEqual([ALL_HANDS, 'Engineers', 'Staff']);
      const gus = await profileOf(wholeDomain, 'gus', people.gus.password);
      expect(gus.groups).toHaveLength(GUS_TEAMS + 1);
      expect(gus.groups).toContain(ALL_HANDS);
      expect(gus.groups).toContain(`team${String(GUS_TEAMS).padStart(4, '0')}`);

      // Without groupSearch the user entry's memberOf is read: direct memberships only, all of them.
      const memberOf = await servers.start(adConfig({ groupSearch: undefined }));
      expect((await profileOf(memberOf, 'gus', people.gus.password)).groups).toHaveLength(GUS_TEAMS);
      expect(sorted((await profileOf(memberOf, 'bob', people.bob.password)).groups)).toEqual([ALL_HANDS, 'Engineers']);
    });
  });
}
