import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnTracked } from './processes.ts';
import type { Measurement } from './measurement.ts';

/** One HTTP request, repeated by wrk on every connection. */
export interface WrkRequest {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Bodies sent in turn, instead of one `body` (see rotatingBodiesScript). */
  bodies?: string[];
}

export interface WrkSettings {
  threads: number;
  connections: number;
}

export function assertWrkInstalled(): void {
  const r = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (r.error) throw new Error('wrk is not installed (Debian: apt-get install -y wrk)');
}

/** A Lua string literal for any bytes: printable ASCII as is, everything else as \ddd (Lua 5.1). */
export function luaString(s: string): string {
  let out = '"';
  for (const byte of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte >= 0x20 && byte < 0x7f && c !== '"' && c !== '\\' ? c : `\\${String(byte).padStart(3, '0')}`;
  }
  return `${out}"`;
}

const luaHeaders = (headers: Record<string, string>) =>
  Object.entries(headers).map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`);

/**
 * Appended to every script: wrk only counts "non-2xx or 3xx" answers; this says which statuses they
 * were and shows the first body of each, so an invalid run says why. Each thread counts in its own Lua
 * state; done() gathers them through thread:get and prints lines parseWrk reads.
 */
const STATUS_TRACKING = `
local threads = {}
function setup(thread) table.insert(threads, thread) end
statuses = {}
samples = {}
local function track(status, body)
  if status >= 400 then
    statuses[status] = (statuses[status] or 0) + 1
    if samples[status] == nil then samples[status] = body:sub(1, 200):gsub("[\\r\\n]", " ") end
  end
end
function done(summary, latency, requests)
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("statuses")) do
      io.write(string.format("bench-status %d %d %s\\n", status, n, t:get("samples")[status] or ""))
    end
  end
end
`;

/** The request as a wrk script: method, headers and body set once, sent on every request. */
export function requestScript(req: WrkRequest): string {
  if (req.bodies) return rotatingBodiesScript({ ...req, bodies: req.bodies });
  return [
    `wrk.method = ${luaString(req.method)}`,
    ...luaHeaders(req.headers ?? {}),
    ...(req.body === undefined ? [] : [`wrk.body = ${luaString(req.body)}`]),
    STATUS_TRACKING,
    'function response(status, headers, body) track(status, body) end',
    '',
  ].join('\n');
}

/**
 * Requests that differ only in their body, sent in turn: the password grant of many users, so that no
 * account sees more than about one sign-in at a time. (Latchkey counts an attempt against the account
 * before checking the password, and refuses a burst of concurrent attempts on one account with 429,
 * as brute-force protection: real sign-ins come from many users.)
 */
export function rotatingBodiesScript(req: WrkRequest & { bodies: string[] }): string {
  if (req.bodies.length === 0) throw new Error('rotatingBodiesScript: no bodies');
  return `${STATUS_TRACKING}
local bodies = { ${req.bodies.map(luaString).join(', ')} }
local headers = { ${Object.entries(req.headers ?? {})
    .map(([k, v]) => `[${luaString(k)}] = ${luaString(v)}`)
    .join(', ')} }
local i = 0

function request()
  i = i % #bodies + 1
  return wrk.format(${luaString(req.method)}, nil, headers, bodies[i])
end

function response(status, hdrs, body) track(status, body) end
`;
}

/**
 * The refresh grant, where no request may be repeated: refresh tokens rotate, so each request spends
 * one and its response carries the successor. The script starts from a pool of fresh tokens (a file,
 * one per line, at least one per connection), takes one per request and puts back the one each
 * response brings. A connection thus always has a token that was never used, and nothing needs
 * precomputing beyond the first token of each connection. A request that finds the pool empty (only
 * after failed responses) sends a dead token and is counted as an error (non-2xx).
 */
export function refreshChainScript(bodyPrefix: string): string {
  return `${STATUS_TRACKING}
local pool = {}
local prefix = ${luaString(bodyPrefix)}
local headers = { ["Content-Type"] = "application/x-www-form-urlencoded" }

function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then pool[#pool + 1] = line end
  end
end

local function urlencode(s)
  return (s:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", string.byte(c)) end))
end

function request()
  local token = table.remove(pool) or "the-pool-ran-dry"
  return wrk.format("POST", nil, headers, prefix .. urlencode(token))
end

function response(status, hdrs, body)
  track(status, body)
  local token = body:match('"refresh_token"%s*:%s*"([^"]+)"')
  if token then pool[#pool + 1] = token end
end
`;
}

/**
 * Full code flows with an SSO cookie: each flow is an authorize GET with a browser's session cookie,
 * answered by a redirect with a code, then that code's exchange at the token endpoint. wrk sends any
 * request on any connection, so the flows are chained through a pool: a redirect's code goes into it,
 * and the next request to go out exchanges a code from it if there is one, else starts a flow with the
 * next cookie (round robin). A flow is done when its exchange answers 200 with an access token; it
 * failed on any other answer to either request (the login page for a lost session, a redirect without
 * a code, an error). done() prints "bench-flows <done> <failed>" for parseWrk, and the first answer of
 * each unexpected status. Latencies are per request, not per flow.
 */
export function codeFlowScript(o: { authorizePath: string; tokenPath: string; cookies: string[]; exchangePrefix: string }): string {
  return `${STATUS_TRACKING}
local codes = {}
local cookies = { ${o.cookies.map(luaString).join(', ')} }
local nextCookie = 0
local authorizePath = ${luaString(o.authorizePath)}
local tokenPath = ${luaString(o.tokenPath)}
local prefix = ${luaString(o.exchangePrefix)}
local formHeaders = { ["Content-Type"] = "application/x-www-form-urlencoded" }
flows = 0
failed = 0

function request()
  local code = table.remove(codes)
  if code then return wrk.format("POST", tokenPath, formHeaders, prefix .. code) end
  nextCookie = nextCookie % #cookies + 1
  return wrk.format("GET", authorizePath, { ["Cookie"] = cookies[nextCookie] }, nil)
end

function response(status, hdrs, body)
  track(status, body)
  local location = hdrs["Location"] or hdrs["location"]
  local code = location and location:match("[?&]code=([^&]+)")
  if code then
    codes[#codes + 1] = code
  elseif status == 200 and body:find('"access_token"', 1, true) then
    flows = flows + 1
  else
    failed = failed + 1
    if status < 400 then
      -- wrk counts this answer as a success: the status tracking must name it.
      statuses[status] = (statuses[status] or 0) + 1
      if samples[status] == nil then samples[status] = ((location or "") .. " " .. body:sub(1, 200)):gsub("[\\r\\n]", " ") end
    end
  end
end

local trackedDone = done
function done(summary, latency, requests)
  trackedDone(summary, latency, requests)
  local ok, bad = 0, 0
  for _, t in ipairs(threads) do
    ok = ok + t:get("flows")
    bad = bad + t:get("failed")
  end
  io.write(string.format("bench-flows %d %d\\n", ok, bad))
end
`;
}

export function writeScript(workDir: string, name: string, lua: string): string {
  const file = join(workDir, `${name.replace(/[^\w-]+/g, '_')}.lua`);
  writeFileSync(file, lua);
  return file;
}

const unitMs: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function duration(text: string | undefined): number | null {
  const m = text ? /^([\d.]+)(us|ms|s|m|h)$/.exec(text) : null;
  return m ? Number(m[1]) * unitMs[m[2]!]! : null;
}

/** Reads wrk's report (run with --latency). */
export function parseWrk(out: string, seconds: number): Measurement {
  const rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const requests = Number(/(\d+) requests in /.exec(out)?.[1]);
  if (!Number.isFinite(rate) || !Number.isFinite(requests)) throw new Error(`cannot read wrk's output:\n${out}`);
  const p99Ms = duration(/^\s+99%\s+(\S+)/m.exec(out)?.[1]);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
  // "bench-status <status> <count> <first body>" lines, from the scripts' done().
  const byStatus = new Map<string, { n: number; sample: string }>();
  for (const m of out.matchAll(/^bench-status (\d+) (\d+) ?(.*)$/gm)) {
    const seen = byStatus.get(m[1]!);
    byStatus.set(m[1]!, { n: (seen?.n ?? 0) + Number(m[2]), sample: seen?.sample ?? m[3]! });
  }
  const statusDetail = [...byStatus].map(([status, { n, sample }]) => `HTTP ${status} ×${n}: ${sample}`);
  const socketDetail = socketErrors ? [`socket errors: ${socket![0]}`] : [];
  const detail = [...statusDetail, ...socketDetail].join('; ');
  // A chained script (codeFlowScript) counts its own operations, done and failed: the rate is of those
  // done, over wrk's time; a failed flow (whichever of its requests failed) is one error.
  const flows = /^bench-flows (\d+) (\d+)$/m.exec(out);
  const counted =
    flows && requests > 0
      ? {
          rate: (Number(flows[1]) * rate) / requests,
          requests: Number(flows[1]) + Number(flows[2]),
          errors: Number(flows[2]) + socketErrors,
        }
      : { rate, requests, errors: non2xx + socketErrors };
  return { ...counted, p99Ms, seconds, tool: 'wrk', ...(detail ? { firstError: detail } : {}) };
}

/**
 * One wrk run against `url`. wrk bounds itself with -d; the extra kill timer only guards against a
 * wedged wrk. `scriptArgs` are passed to the script's init().
 */
export async function runWrk(
  url: string,
  script: string,
  seconds: number,
  settings: WrkSettings,
  scriptArgs: string[] = [],
): Promise<Measurement> {
  const args = [
    `-t${settings.threads}`,
    `-c${settings.connections}`,
    `-d${seconds}s`,
    '--latency',
    '--timeout',
    '10s',
    '-s',
    script,
    url,
    ...(scriptArgs.length ? ['--', ...scriptArgs] : []),
  ];
  const wrk = spawnTracked('wrk', 'wrk', args, { capture: true });
  const guard = setTimeout(() => void wrk.stop(1_000), (seconds + 30) * 1000);
  const { code } = await wrk.exited;
  clearTimeout(guard);
  await wrk.stop(); // nothing left to stop, normally: this unregisters its cleanup
  // wrk reports an error in its script ("FILE.lua:LINE: …") and then runs with its default request:
  // that run measures nothing.
  if (code !== 0 || wrk.output().includes(`${script}:`)) throw new Error(`wrk ${args.join(' ')} failed (${code}):\n${wrk.output()}`);
  return parseWrk(wrk.output(), seconds);
}
