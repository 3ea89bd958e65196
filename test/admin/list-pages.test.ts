import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { GraphQLClient, gql } from 'graphql-request';
import { databaseKinds } from '../helpers/databases.ts';
import { adminCliToken } from '../helpers/admin-api.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

type Totals = { users: { totalCount: number }; clients: { totalCount: number } };
const TOTALS = gql`{ users(first: 1) { totalCount } clients(first: 1) { totalCount } }`;

/**
 * The unfiltered lists' `totalCount` is kept by the database as rows come and go (src/db/row-counts.ts),
 * not counted: whatever writes the rows (the admin API, several at once, an operator's SQL), it must
 * stay the table's count. And pages follow each other by a row value (src/db/pagination.ts): page after
 * page, newest first too, every row once.
 */
describe.each(databaseKinds)('the lists’ pages and totals on %s', (kind) => {
  let server: TestServer;
  let admin: GraphQLClient;

  const counted = async () => ({
    users: Number((await server.sql('users').count({ n: '*' }).first())?.n),
    clients: Number((await server.sql('clients').count({ n: '*' }).first())?.n),
  });
  const totals = async () => {
    const t = await admin.request<Totals>(TOTALS);
    return { users: t.users.totalCount, clients: t.clients.totalCount };
  };

  beforeAll(async () => {
    server = await startTestServer(kind);
    const { access_token } = await adminCliToken(server, 'admin', ADMIN_PASSWORD);
    admin = new GraphQLClient(`${server.url}/graphql`, { headers: { authorization: `Bearer ${access_token}` } });
  });
  afterAll(() => server.stop());

  test('creations and deletions, several at once, through the admin API and at the SQL prompt', async () => {
    const before = await totals();
    expect(before).toEqual(await counted());

    const created = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        admin.request<{ createUser: { id: string } }>(gql`mutation($input: CreateUserInput!) { createUser(input: $input) { id } }`, {
          input: { username: `counted-${i}`, password: `counted-password-${i}` },
        }),
      ),
    );
    const clients = await Promise.all(Array.from({ length: 5 }, (_, i) => server.client({ name: `Counted ${i}` })));
    await Promise.all(
      created.slice(0, 3).map((u) => admin.request(gql`mutation($id: ID!) { deleteUser(id: $id) }`, { id: u.createUser.id })),
    );
    await admin.request(gql`mutation($id: ID!) { deleteClient(clientId: $id) }`, { id: clients[0]!.clientId });
    // An operator's delete at the SQL prompt counts too.
    await server.sql('users').where({ username: 'counted-7' }).delete();

    expect(await totals()).toEqual({ users: before.users + 4, clients: before.clients + 4 });
    expect(await totals()).toEqual(await counted());
  });

  test('many writes one by one: still the count, and the differences folded into one row', async () => {
    const template = await server.sql('users').where({ username: 'admin' }).first();
    for (let i = 0; i < 300; i++) {
      const username = `bulk-${i}`;
      const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      await server.sql('users').insert({ ...template, id, external_id: id, username, username_key: username });
    }
    const expected = await counted();
    expect(await totals()).toEqual(expected);
    // PostgreSQL wrote a row per statement; the read past 256 of them folded them.
    const parts = async () => Number((await server.sql('row_counts').where({ name: 'users' }).count({ n: '*' }).first())?.n);
    expect(await parts()).toBeLessThanOrEqual(2);
    expect(await totals()).toEqual(expected);
    // A few more, then the retention purge's pass folds them too, whoever reads.
    for (let i = 300; i < 305; i++) {
      const username = `bulk-${i}`;
      const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      await server.sql('users').insert({ ...template, id, external_id: id, username, username_key: username });
    }
    await server.ctx.retention.purgeNow();
    expect(await parts()).toBe(1);
    expect(await totals()).toEqual(await counted());
  });

  test('the audit trail page after page, newest first: every event once, those of one millisecond too', async () => {
    type AuditPage = { auditEvents: { edges: Array<{ node: { id: string } }>; pageInfo: { hasNextPage: boolean; endCursor: string } } };
    // Ten events of one millisecond, newest of all, so that page boundaries fall between them.
    const { id: _id, ...template } = (await server.sql('audit_events').orderBy('id', 'desc').first()) as Record<string, unknown>;
    const at = Number((await server.sql('audit_events').max({ at: 'at' }).first())?.at) + 1;
    for (let i = 0; i < 10; i++) await server.sql('audit_events').insert({ ...template, at });
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page: AuditPage = await admin.request(
        gql`query($after: String) { auditEvents(first: 3, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`,
        { after },
      );
      seen.push(...page.auditEvents.edges.map((e) => e.node.id));
      if (!page.auditEvents.pageInfo.hasNextPage) break;
      after = page.auditEvents.pageInfo.endCursor;
    }
    const all = (await server
      .sql('audit_events')
      .select('id')
      .orderBy([
        { column: 'at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])) as Array<{ id: unknown }>;
    expect(seen).toEqual(all.map((r) => String(r.id)));
  });
});
