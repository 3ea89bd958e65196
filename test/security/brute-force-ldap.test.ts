import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { people, personDn } from '../fixtures/ldap/directory.ts';
import { freezeClock, resetClock } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { Browser } from '../helpers/flow.ts';
import { ldapTap, type LdapTap } from '../helpers/ldap-tap.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ldapBackendConfig, ldapChain, startSlapd, type Slapd } from '../helpers/slapd.ts';
import { answer, codeRequest, expectRefused, expectThrottled, expectThrottledPage, passwordGrant } from '../helpers/throttle.ts';

/**
 * "The user is the account, not the typed string … for every backend" (docs/decisions.md), against a real slapd.
 * The directory itself ignores case and leading/trailing spaces in `uid`, so every padded spelling is
 * a way to alice's entry: each must share alice's count, and once she waits, no guess under any
 * spelling may reach the directory. What reaches it is read off the wire by a relay in front of slapd.
 */
describe.each(databaseKinds)('brute-force throttling of directory users on %s', (kind) => {
  let slapd: Slapd;
  let tap: LdapTap;
  let server: TestServer;
  let client: { clientId: string; clientSecret: string | null; redirectUri: string };
  const aliceBinds = () => tap.binds.filter((dn) => dn.toLowerCase() === personDn(people.alice).toLowerCase()).length;

  beforeAll(async () => {
    slapd = await startSlapd();
    tap = await ldapTap(slapd.url);
    server = await startTestServer(kind, ldapChain(ldapBackendConfig({ url: tap.url })));
    client = await server.client({ grantTypes: ['authorization_code', 'password'] });
  });
  afterAll(async () => {
    await server?.stop();
    await tap?.close();
    await slapd?.destroy();
  });

  test('after 5 failures under padded spellings, no spelling reaches the directory, not even with the right password', async () => {
    // The directory's own matching: a padded, upper-case name with the right password is alice.
    for (const spelling of ['  ALICE', 'alice  '])
      expect((await passwordGrant(server.url, client, spelling, people.alice.password)).status).toBe(200);

    const spellings = ['alice', ' alice', '    alice', 'ALICE', 'alice ', ' Alice ', '  aLiCe', 'aLiCe   ', '   ALICE   '];
    // The first delay is one second: the server's clock stands still so that the 55 requests below
    // all fall inside it, however slow the machine.
    freezeClock();
    try {
      for (const spelling of spellings.slice(0, 5))
        expectRefused(await answer(await passwordGrant(server.url, client, spelling, 'wrong-password')));
      const bindsAfterFive = aliceBinds();
      expect(bindsAfterFive).toBeGreaterThanOrEqual(7); // the relay sees each sign-in and failure above

      // 45 more guesses spread over the spellings: all wait, and none is put to the directory.
      for (let i = 0; i < 45; i++)
        expectThrottled(await answer(await passwordGrant(server.url, client, spellings[i % spellings.length]!, `guess-${i}`)));
      // The right password, under every spelling, waits as well.
      for (const spelling of spellings)
        expectThrottled(await answer(await passwordGrant(server.url, client, spelling, people.alice.password)));
      await expectThrottledPage(await new Browser(server).signIn(codeRequest(client), 'Alice', people.alice.password));

      expect(aliceBinds()).toBe(bindsAfterFive);
    } finally {
      resetClock();
    }
  });
});
