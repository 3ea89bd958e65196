import { codeFlowPath, refreshPath } from './flows.ts';
import { form, FORM } from './http.ts';
import type { PathKey } from './goals.ts';
import type { Latchkey } from './latchkey.ts';
import { expectJson, measureWithWrk, type BenchContext, type WrkTarget } from './measure.ts';
import type { Measurement } from './measurement.ts';
import { clientCredentialsGrant, TOKEN_PATH } from './oauth-client.ts';
import type { Seed } from './seed.ts';

/** One seeded server of the scale run: the empty database's or the filled one's. */
export interface ScaleServer {
  label: string;
  server: Latchkey;
  seed: Seed;
  cookies: string[];
}

export interface ScalePath {
  key: PathKey;
  label: string;
  empty: Measurement;
  filled: Measurement;
}

const hasAccessToken = expectJson((b) => typeof b.access_token === 'string', 'an access_token');
const active = expectJson((b) => b.active === true, 'active: true');
const userJson = expectJson(
  (b) => typeof b.sub === 'string' || typeof b.userid === 'string' || typeof b.username === 'string',
  "the user's claims",
);

/**
 * The requests of the main run's wrk paths (bench/hot-paths.ts), against Latchkey alone: the scale run
 * compares Latchkey with itself on an empty database, not with a peer.
 */
async function wrkTarget(key: PathKey, s: ScaleServer): Promise<WrkTarget> {
  const { server, seed } = s;
  const base = { name: `Latchkey (${s.label})`, pid: server.serverPid };
  const post = (path: string, fields: Record<string, string>) => ({
    url: server.url + path,
    request: { method: 'POST' as const, headers: { 'Content-Type': FORM }, body: form(fields) },
  });
  const get = (path: string) => ({
    url: server.url + path,
    request: { method: 'GET' as const, headers: { Authorization: `Bearer ${seed.userAccessToken}` } },
  });
  const service = { client_id: seed.service.clientId, client_secret: seed.service.clientSecret };
  const user = seed.users[0]!;
  switch (key) {
    case 'client_credentials':
      return { ...base, ...post(TOKEN_PATH, { grant_type: 'client_credentials', ...service }), expect: hasAccessToken };
    case 'introspection': {
      const token = (await clientCredentialsGrant(server.url, seed.service)).access_token;
      return { ...base, ...post('/oauth/v20/introspect', { token, ...service }), expect: active };
    }
    case 'me':
      return { ...base, ...get('/api/oauth/v20/me'), expect: userJson };
    case 'userinfo':
      return { ...base, ...get('/connect/v10/userinfo'), expect: userJson };
    case 'password':
      return {
        ...base,
        ...post(TOKEN_PATH, {
          grant_type: 'password',
          client_id: seed.passwordApp.clientId,
          client_secret: seed.passwordApp.clientSecret,
          username: user.username,
          password: user.password,
        }),
        expect: hasAccessToken,
      };
    default:
      throw new Error(`no wrk target for ${key}`);
  }
}

const WRK_PATHS: Array<[PathKey, string]> = [
  ['client_credentials', '`client_credentials`'],
  ['introspection', 'introspection'],
  ['me', '`/api/oauth/v20/me`'],
  ['userinfo', '`/connect/v10/userinfo`'],
  ['password', 'password grant (argon2id)'],
];

/**
 * Every hot path of the main run, on the empty database and then at once on the filled one, path by
 * path: the two figures of a path are a minute apart, not the whole run, so the machine's drift moves
 * them together.
 */
export async function scalePaths(ctx: BenchContext, empty: ScaleServer, filled: ScaleServer): Promise<ScalePath[]> {
  const paths: ScalePath[] = [];
  for (const [key, label] of WRK_PATHS) {
    const e = await measureWithWrk(ctx, key, await wrkTarget(key, empty));
    const f = await measureWithWrk(ctx, key, await wrkTarget(key, filled));
    paths.push({ key, label, empty: e, filled: f });
  }
  const refresh = (s: ScaleServer) => refreshPath(ctx, s.server, s.seed, s.cookies[0]!);
  paths.push({
    key: 'refresh',
    label: 'refresh grant (rotation)',
    empty: (await refresh(empty)).latchkey,
    filled: (await refresh(filled)).latchkey,
  });
  const code = (s: ScaleServer) => codeFlowPath(ctx, s.server, s.seed, s.cookies);
  paths.push({
    key: 'code_flow',
    label: 'code flow with an SSO cookie',
    empty: (await code(empty)).latchkey,
    filled: (await code(filled)).latchkey,
  });
  return paths;
}
