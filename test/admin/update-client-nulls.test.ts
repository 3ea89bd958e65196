import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { exportJWK, generateKeyPair } from 'jose';
import { adminCliToken, graphqlPost, type GraphQLAnswer } from '../helpers/admin-api.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { basic, postForm } from '../helpers/http.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';

const FIELDS = 'clientId tokenEndpointAuthMethod jwks jwksUri accessTokenTtl refreshTokenTtl defaultAudience backchannelLogoutUri name';
type Shown = {
  clientId: string;
  tokenEndpointAuthMethod: string | null;
  jwks: string | null;
  jwksUri: string | null;
  accessTokenTtl: number | null;
  name: string;
};

/** updateClient as GraphQL clients expect it: a field left out stays, null clears it (or resets it to the default). */
describe.each(databaseKinds)('updateClient with null on %s', (kind) => {
  let server: TestServer;
  let admin: string;
  let jwks: string;

  beforeAll(async () => {
    server = await startTestServer(kind);
    admin = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    const { publicKey } = await generateKeyPair('ES256', { extractable: true });
    jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), alg: 'ES256', kid: 'k1' }] });
  });
  afterAll(() => server.stop());

  const update = async (clientId: string, input: Record<string, unknown>): Promise<GraphQLAnswer & { client?: Shown }> => {
    const answer = await graphqlPost(
      server,
      admin,
      `mutation($c: ID!, $i: UpdateClientInput!) { updateClient(clientId: $c, input: $i) { ${FIELDS} } }`,
      { c: clientId, i: input },
    );
    return { ...answer, client: answer.data?.updateClient as Shown | undefined };
  };
  const register = async (input: Record<string, unknown>): Promise<Shown> => {
    const answer = await graphqlPost(
      server,
      admin,
      `mutation($i: RegisterClientInput!) { registerClient(input: $i) { client { ${FIELDS} } } }`,
      {
        i: { name: 'Keys', redirectUris: ['https://rp.example/cb'], grantTypes: ['CLIENT_CREDENTIALS'], ...input },
      },
    );
    expect(answer.errors).toBeUndefined();
    return (answer.data!.registerClient as { client: Shown }).client;
  };
  const refused = (answer: GraphQLAnswer, field: string) => {
    expect(answer.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
  };

  test('jwks, jwksUri and tokenEndpointAuthMethod: null clears them, and the method goes back to Basic or post', async () => {
    const c = await register({ tokenEndpointAuthMethod: 'PRIVATE_KEY_JWT', jwks, accessTokenTtl: 60 });
    expect(c).toMatchObject({ tokenEndpointAuthMethod: 'PRIVATE_KEY_JWT', jwks, jwksUri: null, accessTokenTtl: 60 });

    // Left out: unchanged.
    expect((await update(c.clientId, { name: 'Keys 2' })).client).toMatchObject({
      name: 'Keys 2',
      tokenEndpointAuthMethod: 'PRIVATE_KEY_JWT',
      jwks,
      accessTokenTtl: 60,
    });
    // From registered keys to a key URL.
    const moved = await update(c.clientId, { jwks: null, jwksUri: 'https://rp.example/jwks' });
    expect(moved.errors).toBeUndefined();
    expect(moved.client).toMatchObject({ jwks: null, jwksUri: 'https://rp.example/jwks' });
    // private_key_jwt without any key is refused, and nothing changes.
    refused(await update(c.clientId, { jwksUri: null }), 'jwks');
    // Back to the default: a confidential client may then use Basic or post, once it has a secret.
    const reset = await update(c.clientId, { tokenEndpointAuthMethod: null, jwksUri: null, accessTokenTtl: null });
    expect(reset.errors).toBeUndefined();
    expect(reset.client).toMatchObject({ tokenEndpointAuthMethod: null, jwks: null, jwksUri: null, accessTokenTtl: null });
    const rotated = await graphqlPost(server, admin, 'mutation($c: ID!) { rotateClientSecret(clientId: $c) { clientSecret } }', {
      c: c.clientId,
    });
    const secret = (rotated.data!.rotateClientSecret as { clientSecret: string }).clientSecret;
    const tokenUrl = `${server.url}/oauth/v20/token`;
    expect((await postForm(tokenUrl, { grant_type: 'client_credentials' }, { authorization: basic(c.clientId, secret) })).status).toBe(200);
    expect((await postForm(tokenUrl, { grant_type: 'client_credentials', client_id: c.clientId, client_secret: secret })).status).toBe(200);
  });

  test("a public client's tokenEndpointAuthMethod null is NONE, its default", async () => {
    const c = await register({ confidential: false, grantTypes: ['AUTHORIZATION_CODE'] });
    expect(c.tokenEndpointAuthMethod).toBe('NONE');
    expect((await update(c.clientId, { tokenEndpointAuthMethod: null })).client?.tokenEndpointAuthMethod).toBe('NONE');
  });

  test('null for a field that always has a value is refused, and the client is unchanged', async () => {
    const c = await register({});
    for (const field of ['name', 'redirectUris', 'ssoEnabled', 'errorCodes', 'idTokenAlg'])
      refused(await update(c.clientId, { [field]: null }), field);
    const shown = await graphqlPost(server, admin, 'query($c: ID!) { client(clientId: $c) { name ssoEnabled redirectUris } }', {
      c: c.clientId,
    });
    expect(shown.data!.client).toEqual({ name: 'Keys', ssoEnabled: true, redirectUris: ['https://rp.example/cb'] });
  });
});
