import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { onCleanup } from './cleanup.ts';

/** A child process the bench started, in its own process group, stopped at cleanup whatever happens. */
export interface Tracked {
  name: string;
  /** The spawned process: also the id of its process group. */
  pid: number;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  running(): boolean;
  /** stdout + stderr so far, when captured (`capture: true`); otherwise the log file's tail. */
  output(): string;
  /** SIGTERM to the whole group, SIGKILL after `graceMs`. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Keep stdout and stderr in memory (short-lived tools like wrk). */
  capture?: boolean;
  /** Otherwise both go to this file, so a chatty server costs the bench process nothing. */
  logFile?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The live (non-zombie) processes of a process group, read from /proc. */
export function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so split after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') out.push(Number(entry));
  }
  return out;
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nobody left in the group
  }
}

/**
 * Spawns `command` detached, i.e. as the leader of a new process group. Why: a server started through
 * a shell (or npm) is a tree of processes, and killing the group reaches all of them; and a terminal's
 * Ctrl-C does not hit the children before the bench has decided to stop them.
 */
export function spawnTracked(name: string, command: string, args: string[], options: SpawnOptions = {}): Tracked {
  let captured = '';
  const logFd = options.capture || !options.logFile ? undefined : openSync(options.logFile, 'a');
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    detached: true,
    stdio: ['ignore', logFd ?? (options.capture ? 'pipe' : 'ignore'), logFd ?? (options.capture ? 'pipe' : 'ignore')],
  });
  if (logFd !== undefined) closeSync(logFd); // the child holds its own copy
  child.stdout?.on('data', (d: Buffer) => (captured += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (captured += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (err) => {
      captured += `${name}: ${err.message}\n`;
      resolve({ code: -1, signal: null });
    });
  });
  const pid = child.pid ?? -1;
  const running = () => child.exitCode === null && child.signalCode === null && pid > 0;

  let stopping: Promise<void> | undefined;
  let forget = () => {};
  const stop = (graceMs = 10_000): Promise<void> => {
    stopping ??= (async () => {
      if (pid <= 0) return;
      if (groupMembers(pid).length === 0) return;
      killGroup(pid, 'SIGTERM');
      // The leader may exit before the rest of its group (a shell before its server): wait for all.
      const deadline = Date.now() + graceMs;
      while (groupMembers(pid).length > 0 && Date.now() < deadline) await sleep(50);
      if (groupMembers(pid).length > 0) {
        process.stderr.write(`bench: ${name} did not stop within ${graceMs} ms, killing it\n`);
        killGroup(pid, 'SIGKILL');
      }
      await Promise.race([exited, sleep(2_000)]);
    })().finally(() => forget());
    return stopping;
  };
  forget = onCleanup(
    `stop ${name}`,
    () => stop(),
    () => killGroup(pid, 'SIGKILL'),
  );

  const output = () => {
    if (options.capture || !options.logFile) return captured;
    try {
      return readFileSync(options.logFile, 'utf8').split('\n').slice(-40).join('\n');
    } catch {
      return '';
    }
  };
  return { name, pid, child, exited, running, output, stop };
}

/** Inodes of the sockets listening on a loopback TCP port (IPv4 and IPv6), from /proc/net. */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // f[1] local address "ADDR:PORT" in hex, f[3] state (0A = LISTEN), f[9] inode
      if (f.length > 9 && f[3] === '0A' && parseInt(f[1]!.split(':')[1]!, 16) === port) inodes.add(f[9]!);
    }
  }
  return inodes;
}

/**
 * The process of `group` that listens on `port`: the server itself, not the shell or npm that may
 * have started it. Its /proc/PID/status is what the RSS figure must be read from.
 */
export function listeningPid(group: number, port: number): number | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  for (const pid of groupMembers(group)) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        const m = /^socket:\[(\d+)\]$/.exec(target);
        if (m && inodes.has(m[1]!)) return pid;
      } catch {
        // fd closed meanwhile
      }
    }
  }
  return undefined;
}

/** The peak before the last reset, per process: so that the lifetime peak survives per-path resets. */
const peaksBeforeReset = new Map<number, number>();

function currentHwm(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status);
  if (!m) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

/** Peak resident set size (VmHWM) of a live process over its whole life, in bytes (resets included). */
export function peakRss(pid: number): number {
  return Math.max(currentHwm(pid), peaksBeforeReset.get(pid) ?? 0);
}

/**
 * Starts a new peak for one path: VmHWM is set back to the current RSS (Linux's clear_refs "5"), so
 * that the peak read after the path is that path's own. Without it the one figure at the end says how
 * high memory went, but not which path took it there.
 */
export function resetPathPeak(pid: number): void {
  peaksBeforeReset.set(pid, peakRss(pid));
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** VmHWM since the last resetPathPeak. */
export const pathPeakRss = currentHwm;

/**
 * CPU time (user + system) a process has used so far, in seconds. Clock ticks are 100 a second on
 * Linux on every platform Node runs on (USER_HZ), which node cannot ask sysconf for.
 */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // after "pid (comm) ": state is f[0], so utime (field 14) is f[11] and stime (15) is f[12]
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** The command line of a process, for the report ("which process was measured"). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '?';
  }
}

/** Other heavy work on the machine (a test run) makes the figures worthless: say so up front. */
export function competingProcesses(): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmd = commandLine(Number(entry));
    // The jest process itself (not the shells and npm in front of it), or someone else's wrk.
    if (/^\S*node\S* .*\bjest\b/.test(cmd) || /^(\S*\/)?wrk /.test(cmd)) found.push(`${entry} ${cmd.slice(0, 100)}`);
  }
  return found;
}

export { sleep };
