import { availableParallelism } from 'node:os';
import { hash, verify } from '@node-rs/argon2';
import { span } from '../telemetry/trace.ts';

// OWASP's argon2id floor (19 MiB, t=2, p=1): about 16 ms a hash on the reference machine.
// algorithm 2 is Argon2id (the package's const enum cannot be imported under verbatimModuleSyntax).
const options = { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

/**
 * At most one argon2 computation per core, plus one so that a core never idles while the event loop
 * hands the next one over. More would not finish sooner (each is pure CPU), but each would hold its
 * 19 MiB and a libuv pool thread that file and DNS work also need.
 */
const slots = availableParallelism() + 1;
let running = 0;
const waiting: Array<() => void> = [];

async function limited<T>(work: () => Promise<T>): Promise<T> {
  // A slot is handed straight from a finishing computation to the next waiter, never over-granted.
  if (running < slots) running++;
  else await new Promise<void>((resolve) => waiting.push(resolve));
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

/** The spans' attributes (docs/tracing.md): the algorithm, never the password or the hash. */
const ARGON2 = { 'latchkey.password.algorithm': 'argon2id' } as const;

// A span from the wait for a slot to the end of the computation: a queue of sign-ins shows as waiting here.
export const hashPassword = (password: string): Promise<string> =>
  span('password hash', ARGON2, () => limited(() => hash(password, options)));

/** A hash of nothing anyone knows: verified against for unknown users so both answers take as long. */
let decoy: Promise<string> | undefined;

export async function verifyPassword(storedHash: string | null, password: string): Promise<boolean> {
  if (!storedHash) {
    decoy ??= hashPassword(`decoy:${Math.random()}`);
    const decoyHash = await decoy;
    await span('password verify', ARGON2, () => limited(() => verify(decoyHash, password))).catch(() => false);
    return false;
  }
  try {
    return await span('password verify', ARGON2, () => limited(() => verify(storedHash, password)));
  } catch {
    return false;
  }
}
