/**
 * The client_credentials and introspection peer: node-oidc-provider with its default in-memory
 * adapter, one confidential client allowed client_credentials (secret in the form body, as the bench
 * sends it to Latchkey), opaque access tokens (its default without a resource indicator) and the
 * introspection feature on. Endpoints: POST /token, POST /token/introspection.
 */
import Provider from 'oidc-provider';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: process.env.PEER_CLIENT_ID ?? 'bench-service',
      client_secret: process.env.PEER_CLIENT_SECRET ?? '',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_post',
    },
  ],
  features: {
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    devInteractions: { enabled: false },
  },
  cookies: { keys: ['bench-only-cookie-key-bench-only-cookie-key'] },
  // One hour, as Latchkey's default access-token lifetime (and it silences the "default ttl" notice).
  ttl: { ClientCredentials: 3600 },
});
provider.listen(port, '127.0.0.1');
