import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { basic, get, postForm } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { mountSmallDisk, type SmallDisk } from '../helpers/small-disk.ts';

/**
 * docs/decisions.md "Disk full (SQLite)": answered like an outage. The SQLite file is on a small tmpfs that the
 * test fills under the running server: what writes answers 503 `temporarily_unavailable`, the log
 * has one line when it starts and one when it ends (reads keep working meanwhile, and used to end and
 * restart the outage at every request), /readyz is 503 while writes fail, and freeing the space
 * brings everything back without a restart.
 */
describe('SQLite on a disk that fills up under a running Latchkey', () => {
  let disk: SmallDisk;
  let server: TestServer;
  let app: { clientId: string; clientSecret: string | null };
  let userToken: string;

  const grant = () =>
    postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'client_credentials' },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );
  const me = () => get(`${server.url}/api/oauth/v20/me`, {}, { authorization: `Bearer ${userToken}` });
  const readyz = () => get(`${server.url}/readyz`);
  /** The structured lines logged since `from`, as objects. */
  const linesSince = (from: number) => server.logs.slice(from).map((l) => JSON.parse(l) as { level: number; msg: string; code?: string });

  beforeAll(async () => {
    disk = mountSmallDisk(24);
    // The periodic key check is pushed out of the way, so the log shows what requests cause.
    server = await startTestServer('sqlite', { databaseUrl: `sqlite:${disk.dir}/latchkey.db`, keys: { reloadInterval: 3600 } });
    await server.user('olivia', 'olivia-password-1');
    app = await server.client({ grantTypes: ['client_credentials', 'password'] });
    const res = await postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username: 'olivia', password: 'olivia-password-1' },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );
    userToken = ((await res.json()) as { access_token: string }).access_token;
  });
  afterAll(async () => {
    await server?.stop();
    disk?.unmount();
  });

  test('writes answer 503 temporarily_unavailable, reads still work, /readyz is 503, one log line; freed space ends it with one more line', async () => {
    expect((await grant()).status).toBe(200);
    expect((await readyz()).status).toBe(200);
    const before = server.logs.length;
    disk.fill();

    // SQLite keeps writing into the space its files already hold for a while: grants go on until one
    // meets the full disk.
    let first503: Response | undefined;
    for (let i = 0; i < 20_000 && !first503; i++) {
      const res = await grant();
      if (res.status === 503) first503 = res;
      else expect(res.status).toBe(200);
    }
    expect(first503).toBeDefined();
    expect(await first503!.json()).toMatchObject({ error: 'temporarily_unavailable' });

    // Writes and reads interleaved, as real traffic is: every grant refused, every /me answered.
    const statuses = { grant: new Set<number>(), me: new Set<number>(), readyz: new Set<number>() };
    for (let i = 0; i < 60; i++) {
      const g = await grant();
      statuses.grant.add(g.status);
      if (g.status === 503) expect(((await g.json()) as { error: string }).error).toBe('temporarily_unavailable');
      statuses.me.add((await me()).status);
      if (i % 10 === 0) statuses.readyz.add((await readyz()).status);
    }
    expect(statuses).toEqual({ grant: new Set([503]), me: new Set([200]), readyz: new Set([503]) });
    expect(await (await readyz()).json()).toMatchObject({ database: 'down' });

    const during = linesSince(before);
    expect(during).toHaveLength(1);
    expect(during[0]).toMatchObject({ level: 50, code: 'SQLITE_FULL' });
    expect(during[0]!.msg).toMatch(/refuses writes/);

    disk.free();
    // /readyz tries a write of its own: it turns 200 as soon as writes work, with no request needed.
    const deadline = Date.now() + 10_000;
    let ready = 0;
    while (Date.now() < deadline && (ready = (await readyz()).status) !== 200) await new Promise((r) => setTimeout(r, 100));
    expect(ready).toBe(200);
    for (let i = 0; i < 5; i++) expect((await grant()).status).toBe(200);

    const all = linesSince(before);
    expect(all).toHaveLength(2);
    expect(all[1]).toMatchObject({ level: 40, msg: 'database accepts writes again' });
  });
});
