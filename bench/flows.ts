import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { form, json, postForm } from './http.ts';
import type { Latchkey } from './latchkey.ts';
import { countedRun, type BenchContext } from './measure.ts';
import { authorizePathAndQuery, authorizeWithSession, exchangeCode, TOKEN_PATH, type TokenResponse } from './oauth-client.ts';
import { resetPathPeak } from './processes.ts';
import type { PathResult } from './report.ts';
import type { Seed } from './seed.ts';
import { codeFlowScript, refreshChainScript, runWrk, writeScript } from './wrk.ts';

/** Fresh refresh tokens, each from its own code flow (so each starts its own token family). */
async function mintRefreshTokens(server: Latchkey, s: Seed, cookie: string, count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    const code = await authorizeWithSession(server.url, s.web, cookie);
    const { refresh_token } = await exchangeCode(server.url, s.web, code);
    if (!refresh_token) throw new Error('the code exchange of a client with the refresh_token grant gave no refresh_token');
    tokens.push(refresh_token);
  }
  return tokens;
}

/**
 * The refresh grant, with wrk: refresh tokens rotate, so no request may be repeated. Each connection
 * starts from a fresh token of a pool and then spends the token each response brings (see
 * refreshChainScript): every request presents a token never used before, as a client would. There
 * is no peer: oidc-provider issues refresh tokens only through an interactive code flow.
 */
export async function refreshPath(ctx: BenchContext, server: Latchkey, s: Seed, cookie: string): Promise<PathResult> {
  const { options: o } = ctx;
  const clientAuth = { client_id: s.web.clientId, client_secret: s.web.clientSecret };
  // Probe: one rotation by hand, with a token of its own.
  const [probeToken] = await mintRefreshTokens(server, s, cookie, 1);
  const rotated = json<TokenResponse>(
    await postForm(server.url + TOKEN_PATH, { grant_type: 'refresh_token', refresh_token: probeToken!, ...clientAuth }),
    'refresh grant',
  );
  if (!rotated.refresh_token || rotated.refresh_token === probeToken) throw new Error('the refresh grant did not rotate the refresh token');

  // A pool per run, a few spare tokens per run beyond one per connection.
  const poolFile = async (name: string) => {
    const file = join(ctx.workDir, `${name}.tokens`);
    writeFileSync(file, `${(await mintRefreshTokens(server, s, cookie, o.connections + 16)).join('\n')}\n`);
    return file;
  };
  const warmupPool = await poolFile('refresh-warmup');
  const pool = await poolFile('refresh');
  const script = writeScript(
    ctx.workDir,
    'refresh',
    refreshChainScript(`${form({ grant_type: 'refresh_token', ...clientAuth })}&refresh_token=`),
  );
  ctx.log(`refresh grant at Latchkey: warm-up ${o.warmupSeconds} s, then ${o.seconds} s`);
  resetPathPeak(server.serverPid);
  await runWrk(server.url + TOKEN_PATH, script, o.warmupSeconds, o, [warmupPool]);
  const m = await countedRun(ctx, 'refresh grant', server.serverPid, () => runWrk(server.url + TOKEN_PATH, script, o.seconds, o, [pool]));
  return {
    key: 'refresh',
    label: 'refresh grant (rotation)',
    unit: 'req/s',
    method: `wrk with a Lua script: each of the ${o.connections} connections starts from a fresh refresh token (a pool minted by code flows) and spends the successor each answer brings, so every request presents an unused token; no peer (oidc-provider gives refresh tokens only after an interactive sign-in)`,
    latchkey: m,
  };
}

/**
 * The full code flow of a signed-in browser: authorize GET with the SSO cookie → redirect with a code
 * → code exchange, as flows/s. wrk chains the two requests through a pool of codes (codeFlowScript):
 * a Node client doing the same took as much CPU as the server, on the same two cores.
 */
export async function codeFlowPath(ctx: BenchContext, server: Latchkey, s: Seed, cookies: string[]): Promise<PathResult> {
  const { options: o } = ctx;
  // Probe: one flow by hand.
  const code = await authorizeWithSession(server.url, s.web, cookies[0]!);
  await exchangeCode(server.url, s.web, code);
  const exchange = form({
    grant_type: 'authorization_code',
    redirect_uri: s.web.redirectUri,
    client_id: s.web.clientId,
    client_secret: s.web.clientSecret,
  });
  const script = writeScript(
    ctx.workDir,
    'code-flow',
    codeFlowScript({ authorizePath: authorizePathAndQuery(s.web), tokenPath: TOKEN_PATH, cookies, exchangePrefix: `${exchange}&code=` }),
  );
  ctx.log(`full code flow at Latchkey: warm-up ${o.warmupSeconds} s, then ${o.seconds} s`);
  resetPathPeak(server.serverPid);
  await runWrk(server.url + TOKEN_PATH, script, o.warmupSeconds, o);
  const m = await countedRun(ctx, 'full code flow', server.serverPid, () => runWrk(server.url + TOKEN_PATH, script, o.seconds, o));
  return {
    key: 'code_flow',
    label: 'full code flow with an SSO cookie (authorize → 302 → token)',
    unit: 'flows/s',
    method: `wrk with a Lua script chaining each flow's two requests through a pool of codes: a redirect's code is exchanged by the next request to go out, else a flow starts with the next of ${cookies.length} browsers' SSO cookies (confidential client, scope openid profile email, so an id_token is signed); p99 is per request, not per flow; no peer`,
    latchkey: m,
  };
}
