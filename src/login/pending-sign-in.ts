import { seal, unseal } from '../crypto/sealed.ts';
import type { Amr } from '../mfa/service.ts';

/** How long the second step may wait after the password. */
const TTL_MS = 5 * 60 * 1000;

interface Pending {
  userId: string;
  amr: Amr[];
  clientId: string;
}

/**
 * A sign-in whose password was right and whose second factor is still to come, carried by the second
 * step's form (no server-side state): the user, the factors so far and the client, signed, for five
 * minutes. It opens nothing by itself: the second step still needs a factor, counted by the
 * brute-force policy.
 */
export const sealPending = (key: Buffer, p: Pending): string => seal(key, 'pending-sign-in', { ...p }, TTL_MS);

export function openPending(key: Buffer, sealed: string | undefined, clientId: string): Pending | undefined {
  const p = unseal<Pending>(key, 'pending-sign-in', sealed);
  return p && p.clientId === clientId ? { userId: p.userId, amr: p.amr, clientId: p.clientId } : undefined;
}
