/**
 * The lease of a backend's `directory_syncs` row: one process of a deployment syncs a backend at a
 * time. It expires, so a process that died mid-pass holds it no longer than `LEASE_MS`; the holder
 * renews it while its pass runs, and stops writing once it cannot be sure it still holds it.
 */
import type { Logger } from 'pino';
import { clock } from '../clock.ts';
import type { SyncQueries } from './sync-queries.ts';

export const LEASE_MS = 60_000;
const RENEW_MS = 15_000;

export interface HeldLease {
  /** Whether this process still holds the lease (renewed in time, and not found taken). */
  held(): boolean;
  release(): void;
}

/** Keeps a lease taken until `release`, renewing it every `RENEW_MS`. */
export function keepLease(queries: Pick<SyncQueries, 'renewLease'>, backend: string, holder: string, logger: Logger): HeldLease {
  // Tracked locally in monotonic time: what counts is how long since this process last renewed it.
  let renewedAt = performance.now();
  let lost = false;
  const timer = setInterval(() => {
    const asked = performance.now();
    queries.renewLease(backend, holder, clock.now() + LEASE_MS).then(
      (ok) => {
        if (ok) renewedAt = asked;
        else lost = true;
      },
      (err: Error) => logger.warn({ backend, err: err.message }, 'directory sync lease not renewed; trying again'),
    );
  }, RENEW_MS).unref();
  return {
    // A little short of the expiry: the database's clock and this one may differ a bit.
    held: () => !lost && performance.now() - renewedAt < LEASE_MS - 5000,
    release: () => clearInterval(timer),
  };
}
