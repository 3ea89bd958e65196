import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { DatabaseKind } from '../helpers/databases.ts';
import { Browser } from '../helpers/flow.ts';
import type { TestServer } from '../helpers/server.ts';
import { LOCKOUT_THRESHOLD, people, personDn, type AdPerson } from './directory.ts';
import { adConfig, dc, Servers, signIn } from './harness.ts';

const WRONG = 'Not-The-Password-1';
const wrongPassword = { status: 400, body: { error: 'invalid_grant', error_description: 'invalid username or password' } };

/**
 * Locks lou the way an attacker would: wrong passwords straight to the DC. Once it is locked the DC
 * answers 775 even to those. (A right password in between would reset AD's count.)
 */
async function lockOut(lou: AdPerson): Promise<void> {
  for (let i = 0; i <= LOCKOUT_THRESHOLD; i++) if ((await dc().rawBind(personDn(lou), WRONG)).includes('data 775')) return;
  throw new Error(`${lou.sam} is not locked after ${LOCKOUT_THRESHOLD + 1} wrong passwords`);
}

/**
 * AD's refusals of a bind (result 49 with `data <code>`): each reason a right password can meet gets
 * its own message, and a wrong password learns nothing about the account, whatever its state.
 */
export function bindRefusalTests(kind: DatabaseKind): void {
  describe(`AD bind refusals on ${kind}`, () => {
    const servers = new Servers(kind);
    let server: TestServer;

    /** The error the login page shows for this attempt. */
    async function pageError(username: string, password: string): Promise<string | undefined> {
      const app = await server.client();
      const page = await new Browser(server).signIn(
        { client_id: app.clientId, redirect_uri: app.redirectUri, response_type: 'code' },
        username,
        password,
      );
      return /<p class="error" role="alert">([^<]*)<\/p>/.exec(await page.text())?.[1];
    }

    beforeAll(async () => {
      server = await servers.start(adConfig());
      await lockOut(people.lou);
    });
    afterAll(() => servers.stopAll());

    test.each([
      ['dora', '533', 'the account is disabled', 'This account is disabled.'],
      ['eve', '701', 'the account has expired', 'This account has expired.'],
      ['mike', '773', 'the password must be changed before signing in', 'Your password must be changed before you can sign in.'],
    ] as const)(
      '%s (data %s): the right password is told why; a wrong one gets the answer any wrong password gets',
      async (key, code, description, sentence) => {
        const p = people[key];
        // The DC's own answers: the state is real, and only the right password hears about it.
        expect(await dc().rawBind(personDn(p), p.password)).toContain(`data ${code}`);
        expect(await dc().rawBind(personDn(p), WRONG)).toContain('data 52e');

        expect(await signIn(server, p.sam, p.password)).toEqual({
          status: 400,
          body: { error: 'invalid_grant', error_description: description },
        });
        expect(await pageError(p.sam, p.password)).toBe(sentence);
        expect(await signIn(server, p.sam, WRONG)).toEqual(wrongPassword);
        expect(await pageError(p.sam, WRONG)).toBe('Invalid username or password.');
      },
    );

    test('a locked account: AD answers 775 to any password, so Latchkey says what it says to any wrong password', async () => {
      const lou = people.lou;
      expect(await dc().rawBind(personDn(lou), lou.password)).toContain('data 775');
      expect(await dc().rawBind(personDn(lou), WRONG)).toContain('data 775');

      for (const password of [lou.password, WRONG]) {
        expect(await signIn(server, lou.sam, password)).toEqual(wrongPassword);
        expect(await pageError(lou.sam, password)).toBe('Invalid username or password.');
      }
      // The same answer as for an active account's wrong password and for a name nobody has.
      expect(await signIn(server, 'alice', WRONG)).toEqual(wrongPassword);
      expect(await signIn(server, 'nobody-by-this-name', WRONG)).toEqual(wrongPassword);
    });
  });
}
