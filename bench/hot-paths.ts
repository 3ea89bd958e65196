import { form, FORM, json, postForm } from './http.ts';
import type { Latchkey } from './latchkey.ts';
import { expectJson, measureWithWrk, type BenchContext, type WrkTarget } from './measure.ts';
import { clientCredentialsGrant, TOKEN_PATH } from './oauth-client.ts';
import { GLEWLWYD_SCOPE } from './glewlwyd.ts';
import type { Peer, Peers } from './peers.ts';
import type { PathResult } from './report.ts';
import type { Seed } from './seed.ts';

const post = (url: string, fields: Record<string, string>) => ({
  url,
  request: { method: 'POST' as const, headers: { 'Content-Type': FORM }, body: form(fields) },
});
const get = (url: string, bearer: string) => ({ url, request: { method: 'GET' as const, headers: { Authorization: `Bearer ${bearer}` } } });

const hasAccessToken = expectJson((b) => typeof b.access_token === 'string', 'an access_token');

/**
 * The paths wrk can drive with one fixed request, each against Latchkey and then against its peer in
 * this same run: client_credentials, introspection, /me, userinfo, the password grant; and against
 * Glewlwyd, when installed, for client_credentials, userinfo and the password grant. Every side gets
 * the same request shape (form body with client_id/client_secret, or a bearer header).
 */
export async function hotPaths(ctx: BenchContext, server: Latchkey, peers: Peers, s: Seed): Promise<PathResult[]> {
  const { service } = s;
  const latchkey = (rest: Omit<WrkTarget, 'name' | 'pid'>): WrkTarget => ({ name: 'Latchkey', pid: server.serverPid, ...rest });
  const peer = (p: Peer, rest: Omit<WrkTarget, 'name' | 'pid'>): WrkTarget => ({ name: p.name, pid: p.process.pid, ...rest });

  // Tokens to introspect, one per server, each introspected by the client it was issued to. Minted
  // just before that path runs: oidc-provider's in-memory adapter keeps only the last 1,000 entries,
  // so a token minted before the client_credentials run would be gone by then.
  const serviceTokens = async () => ({
    latchkey: (await clientCredentialsGrant(server.url, service)).access_token,
    peer: json<{ access_token: string }>(
      await postForm(`${peers.oidcProvider.url}/token`, {
        grant_type: 'client_credentials',
        client_id: service.clientId,
        client_secret: service.clientSecret,
      }),
      'oidc-provider client_credentials',
    ).access_token,
  });
  const clientAuth = { client_id: service.clientId, client_secret: service.clientSecret };
  const active = expectJson((b) => b.active === true, 'active: true');
  const userJson = expectJson(
    (b) => typeof b.sub === 'string' || typeof b.userid === 'string' || typeof b.username === 'string',
    "the user's claims",
  );

  const g = peers.glewlwyd;
  // One account for every connection: only failed attempts count against the brute-force throttle,
  // so right passwords in parallel on one account must all be answered (issue 20).
  const user = s.users[0]!;
  const passwordFields = {
    grant_type: 'password',
    client_id: s.passwordApp.clientId,
    client_secret: s.passwordApp.clientSecret,
    username: user.username,
    password: user.password,
  };

  const paths: Array<{
    key: PathResult['key'];
    label: string;
    method: string;
    targets(): Promise<{ latchkey: WrkTarget; peer: WrkTarget; glewlwyd?: WrkTarget; glewlwydPlainSecret?: WrkTarget }>;
  }> = [
    {
      key: 'client_credentials',
      label: '`client_credentials` at `/oauth/v20/token`',
      method:
        'wrk POSTs grant_type=client_credentials with client_id/client_secret in the form body to both (oidc-provider: POST /token, in-memory adapter, opaque tokens)',
      targets: async () => ({
        latchkey: latchkey({
          ...post(server.url + TOKEN_PATH, { grant_type: 'client_credentials', ...clientAuth }),
          expect: hasAccessToken,
        }),
        peer: peer(peers.oidcProvider, {
          ...post(`${peers.oidcProvider.url}/token`, { grant_type: 'client_credentials', ...clientAuth }),
          expect: hasAccessToken,
        }),
        ...(g
          ? {
              glewlwyd: peer(g, {
                ...post(g.tokenUrl, { grant_type: 'client_credentials', scope: GLEWLWYD_SCOPE, ...clientAuth }),
                expect: hasAccessToken,
              }),
              glewlwydPlainSecret: peer(g, {
                ...post(g.tokenUrl, {
                  grant_type: 'client_credentials',
                  scope: GLEWLWYD_SCOPE,
                  client_id: g.plainSecretClient.clientId,
                  client_secret: g.plainSecretClient.clientSecret,
                }),
                expect: hasAccessToken,
              }),
            }
          : {}),
      }),
    },
    {
      key: 'introspection',
      label: 'introspection at `/oauth/v20/introspect`',
      method:
        'wrk POSTs token=<an active client_credentials token of the calling client> with the client credentials in the form body (oidc-provider: POST /token/introspection)',
      targets: async () => {
        const tokens = await serviceTokens();
        return {
          latchkey: latchkey({ ...post(`${server.url}/oauth/v20/introspect`, { token: tokens.latchkey, ...clientAuth }), expect: active }),
          peer: peer(peers.oidcProvider, {
            ...post(`${peers.oidcProvider.url}/token/introspection`, { token: tokens.peer, ...clientAuth }),
            expect: active,
          }),
        };
      },
    },
    {
      key: 'me',
      label: '`/api/oauth/v20/me` with a bearer token',
      method:
        "wrk GETs with the user's access token (password grant, scope openid profile email) in the Authorization header; the peer is a bare Express 5 `res.json` of a constant body",
      targets: async () => ({
        latchkey: latchkey({ ...get(`${server.url}/api/oauth/v20/me`, s.userAccessToken), expect: userJson }),
        peer: peer(peers.hello, { ...get(`${peers.hello.url}/me`, s.userAccessToken), expect: userJson }),
      }),
    },
    {
      key: 'userinfo',
      label: '`/connect/v10/userinfo` with a bearer token',
      method: 'as /me, on the OIDC UserInfo endpoint; the same Express hello peer',
      targets: async () => ({
        latchkey: latchkey({ ...get(`${server.url}/connect/v10/userinfo`, s.userAccessToken), expect: userJson }),
        peer: peer(peers.hello, { ...get(`${peers.hello.url}/me`, s.userAccessToken), expect: userJson }),
        ...(g ? { glewlwyd: peer(g, { ...get(g.userinfoUrl, g.userAccessToken), expect: userJson }) } : {}),
      }),
    },
    {
      key: 'password',
      label: 'password grant (database backend)',
      method:
        'wrk POSTs grant_type=password of one database user on all 32 connections; the peer is a bare Express 5 server verifying one argon2id hash of the same parameters per request, same body',
      targets: async () => ({
        latchkey: latchkey({ ...post(server.url + TOKEN_PATH, passwordFields), expect: hasAccessToken }),
        peer: peer(peers.argon2, {
          ...post(`${peers.argon2.url}/verify`, { username: user.username, password: user.password }),
          expect: expectJson((b) => b.ok === true, 'ok: true'),
        }),
        // Glewlwyd's password grant as its service client (scope openid: an id_token, as Latchkey's).
        ...(g
          ? {
              glewlwyd: peer(g, {
                ...post(g.tokenUrl, {
                  grant_type: 'password',
                  ...clientAuth,
                  username: user.username,
                  password: user.password,
                  scope: 'openid',
                }),
                expect: hasAccessToken,
              }),
            }
          : {}),
      }),
    },
  ];

  const results: PathResult[] = [];
  for (const p of paths) {
    const targets = await p.targets();
    const mine = await measureWithWrk(ctx, p.key, targets.latchkey);
    const theirs = await measureWithWrk(ctx, p.key, targets.peer);
    const glewlwyd = targets.glewlwyd ? await measureWithWrk(ctx, p.key, targets.glewlwyd) : undefined;
    const plain = targets.glewlwydPlainSecret ? await measureWithWrk(ctx, `${p.key}-plain-secret`, targets.glewlwydPlainSecret) : undefined;
    results.push({
      key: p.key,
      label: p.label,
      unit: 'req/s',
      method: p.method,
      latchkey: mine,
      peer: { name: targets.peer.name, measurement: theirs },
      ...(glewlwyd ? { glewlwyd } : {}),
      ...(plain ? { glewlwydPlainSecret: plain } : {}),
    });
  }
  return results;
}
