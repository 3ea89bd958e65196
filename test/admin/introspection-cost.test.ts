import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { getIntrospectionQuery } from 'graphql';
import { adminCliToken, graphqlPost } from '../helpers/admin-api.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * docs/decisions.md "GraphQL cost": introspection fields are priced like any other. A big nested introspection
 * query (it used to turn 63 KB into a 10.5 MB answer) is refused before it runs; what GraphQL tools
 * send to learn the schema still works.
 */
describe('introspection under the cost limit', () => {
  let server: TestServer;
  let token: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD)).access_token;
  });
  afterAll(() => server.stop());

  test('the introspection query of GraphQL tools (graphql-js getIntrospectionQuery, with every option) answers the whole schema', async () => {
    for (const query of [
      getIntrospectionQuery(),
      getIntrospectionQuery({
        descriptions: true,
        specifiedByUrl: true,
        directiveIsRepeatable: true,
        schemaDescription: true,
        inputValueDeprecation: true,
      }),
    ]) {
      const res = await graphqlPost(server, token, query);
      expect(res.errors).toBeUndefined();
      expect(res.status).toBe(200);
      const types = (res.data!.__schema as { types: Array<{ name: string }> }).types.map((t) => t.name);
      expect(types).toEqual(expect.arrayContaining(['Query', 'Mutation', 'Client', 'User', '__Schema']));
    }
    const one = await graphqlPost(
      server,
      token,
      '{ __type(name: "Client") { name fields { name type { kind name ofType { kind name } } } } }',
    );
    expect(one.errors).toBeUndefined();
  });

  test('a big nested introspection query is refused by the cost limit, in the usual error shape, before it runs', async () => {
    // Each alias is small and passes graphql-js's own introspection depth rule; together they were
    // free, and asked for the whole schema hundreds of times over.
    const aliases = Array.from(
      { length: 700 },
      (_, i) => `a${i}: __schema { types { name fields { name args { name } type { name kind } } } }`,
    );
    const query = `{ ${aliases.join(' ')} }`;
    expect(query.length).toBeGreaterThan(50_000);
    const started = Date.now();
    const res = await graphqlPost(server, token, query);
    expect(res.status).toBe(400);
    expect(res.data ?? null).toBeNull();
    expect(res.errors).toHaveLength(1);
    expect(res.errors![0]!.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(res.errors![0]!.message).toMatch(/^query cost \d+ exceeds the limit of \d+$/);
    expect(Date.now() - started).toBeLessThan(5000);

    // Nesting multiplies: one block that walks from types to their fields' types' fields is refused alone.
    const nested = await graphqlPost(
      server,
      token,
      '{ __schema { types { name fields { name type { name fields { name type { name kind } } } } } } }',
    );
    expect(nested.errors?.map((e) => e.message)).toContainEqual(expect.stringMatching(/^query cost \d+ exceeds the limit of \d+$/));
    // Aliases of a small introspection add up like aliases of any field.
    const alias = (i: number) => `t${i}: __type(name: "Client") { name kind fields { name } }`;
    const few = await graphqlPost(server, token, `{ ${Array.from({ length: 20 }, (_, i) => alias(i)).join(' ')} }`);
    expect(few.errors).toBeUndefined();
    const many = await graphqlPost(server, token, `{ ${Array.from({ length: 300 }, (_, i) => alias(i)).join(' ')} }`);
    expect(many.errors?.[0]?.message).toMatch(/^query cost \d+ exceeds the limit of \d+$/);
  });

  test('introspection counts toward the depth limit where it can answer', async () => {
    const deep = '{ __schema { queryType { fields { type { fields { type { fields { type { fields { type { name } } } } } } } } } } }';
    const res = await graphqlPost(server, token, deep);
    expect(res.status).toBe(400);
    expect(res.errors?.map((e) => e.message)).toContainEqual(expect.stringMatching(/^query depth \d+ exceeds the limit of 10$/));
  });
});
