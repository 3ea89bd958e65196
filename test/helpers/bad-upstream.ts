import express from 'express';
import type { Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/** How the misbehaving upstream misbehaves: a good provider, or one fault at a time. */
export type Misbehaviour = 'good' | 'wrong-nonce' | 'wrong-aud' | 'bad-signature' | 'html-discovery' | 'hang' | 'token-error';

export interface BadUpstream {
  issuer: string;
  clientId: string;
  clientSecret: string;
  mode: Misbehaviour;
  /** Starts listening (on the port chosen at creation: an upstream may be configured before it is up). */
  listen(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A small OpenID provider by hand, which can get things wrong on purpose: an id_token with the wrong
 * nonce or audience or signed by a key not in its JWKS, HTML for its metadata, an error at the token
 * endpoint, or no answer at all. Its authorize endpoint signs in at once (no page) and sends the
 * browser straight back with a code.
 */
export async function badUpstream(port: number): Promise<BadUpstream> {
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const stranger = (await generateKeyPair('RS256')).privateKey;
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, string>();
  const state = { mode: 'good' as Misbehaviour };
  const hanging = new Set<express.Response>();

  const app = express();
  app.get('/.well-known/openid-configuration', (_req, res) => {
    if (state.mode === 'hang') return void hanging.add(res);
    if (state.mode === 'html-discovery') return void res.type('html').send('<!doctype html><h1>Welcome to our portal</h1>');
    res.json({
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/jwks`,
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      code_challenge_methods_supported: ['S256'],
    });
  });
  app.get('/jwks', (_req, res) => void res.json({ keys: [jwk] }));
  app.get('/authorize', (req, res) => {
    const code = `code-${codes.size + 1}-${Math.random().toString(36).slice(2)}`;
    codes.set(code, String(req.query.nonce));
    const back = new URL(String(req.query.redirect_uri));
    back.searchParams.set('code', code);
    back.searchParams.set('state', String(req.query.state));
    res.redirect(302, back.href);
  });
  app.post('/token', express.urlencoded({ extended: false }), async (req, res) => {
    if (state.mode === 'hang') return void hanging.add(res);
    if (state.mode === 'token-error')
      return void res.status(400).json({ error: 'invalid_grant', error_description: 'the code is not valid' });
    const nonce = codes.get(String(req.body.code));
    codes.delete(String(req.body.code));
    if (nonce === undefined) return void res.status(400).json({ error: 'invalid_grant' });
    const signWith: CryptoKey = state.mode === 'bad-signature' ? stranger : privateKey;
    const idToken = await new SignJWT({
      nonce: state.mode === 'wrong-nonce' ? 'not-the-nonce' : nonce,
      preferred_username: 'carol',
      email: 'carol@partner.test',
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(issuer)
      .setSubject('carol-sub')
      .setAudience(state.mode === 'wrong-aud' ? 'someone-else' : 'bad-client')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(signWith);
    res.json({ access_token: 'opaque-access-token', token_type: 'Bearer', expires_in: 300, id_token: idToken });
  });

  let server: Server | undefined;
  return {
    issuer,
    clientId: 'bad-client',
    clientSecret: 'bad-client-secret',
    get mode() {
      return state.mode;
    },
    set mode(m: Misbehaviour) {
      state.mode = m;
    },
    listen: () =>
      new Promise<void>((resolve) => {
        server = app.listen(port, '127.0.0.1', () => resolve());
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        if (!server) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
