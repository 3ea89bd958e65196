import type { Request, Response } from 'express';
import { clock } from '../clock.ts';
import { hkdfSync } from 'node:crypto';
import { seal, unseal } from '../crypto/sealed.ts';
import { decrypt, encrypt } from '../crypto/secrets.ts';
import { hashToken, randomToken, safeEqual } from '../crypto/tokens.ts';
import type { Amr } from '../login/model.ts';
import { cookieOptions, readCookie } from './cookies.ts';
import type { SessionStore } from '../login/sessions.ts';

/** How long the second step may wait after the password. */
const TTL_MS = 5 * 60 * 1000;
const PURPOSE = 'pending-sign-in';

/** The browser that typed the password: a random value whose hash the pending sign-in carries. */
export const PENDING_COOKIE = 'lk_pending';

export interface Pending {
  userId: string;
  amr: Amr[];
  clientId: string;
  /**
   * The old password of a sign-in that must change it (docs/identity-backends.md): the directory write is bound as the
   * user. Sealed encrypted under a key derived from this browser's cookie, which the page never holds.
   */
  oldPassword?: string;
  /** The directory's warning with the right password (docs/identity-backends.md), told after the second factor. */
  passwordExpiresAt?: number;
}

interface Sealed extends Omit<Pending, 'oldPassword'> {
  oldPassword?: string;
  /** Its row server-side, taken by the one request that uses it. */
  id: string;
  /** The hash of this browser's `lk_pending` cookie. */
  browser: string;
  exp: number;
}

/** A pending sign-in taken for one attempt; `again` starts the next one (a wrong code), in what is left of its time. */
export type TakenPending = Pending & { again(res: Response): Promise<string> };

/** The key of a pending sign-in's secret: the server's and this browser's together. */
const secretKey = (key: Buffer, nonce: string) => Buffer.from(hkdfSync('sha256', key, nonce, 'pending-sign-in-secret', 32));

/**
 * Reads the form's pending sign-in without taking it: only to choose whose passkeys a second step's
 * WebAuthn options list (/passkey/options), which opens nothing. Whatever the flow's client (an OAuth
 * client, `saml:<id>`, a /device code's): the options grant nothing, and the passkey's answer goes
 * back through the flow's own form, where `take` checks the client.
 */
export function openPending(key: Buffer, sealed: string | undefined): Pending | undefined {
  const p = unseal<Sealed>(key, PURPOSE, sealed);
  return p ? { userId: p.userId, amr: p.amr, clientId: p.clientId } : undefined;
}

/**
 * A sign-in whose password was right and whose second factor is still to come (docs/decisions.md, "The pending
 * sign-in"): the user, the factors so far and the client, sealed into the second step's form for five
 * minutes. It is bound to the browser that typed the password (a cookie set with the second step's
 * page), so the form's fields are worth nothing elsewhere, and it is used once: each attempt takes
 * its row server-side, in any process, and a wrong code gets a new one. It opens nothing by itself:
 * the second step still needs a factor, counted by the brute-force policy.
 */
export function pendingSignIns(key: Buffer, secure: boolean, store: Pick<SessionStore, 'startPending' | 'takePending'>) {
  async function begin(req: Request, res: Response, p: Pending, expiresAt: number): Promise<string> {
    let nonce = readCookie(req, PENDING_COOKIE);
    if (!nonce || nonce.length < 32) nonce = randomToken();
    res.cookie(PENDING_COOKIE, nonce, cookieOptions(secure, TTL_MS));
    const id = await store.startPending(p.userId, expiresAt);
    const oldPassword = p.oldPassword === undefined ? undefined : encrypt(secretKey(key, nonce), p.oldPassword);
    return seal(key, PURPOSE, { ...p, oldPassword, id, browser: hashToken(nonce) }, expiresAt - clock.now());
  }

  return {
    /** After a right password: the sealed value for the second step's form (and this browser's cookie). */
    begin: (req: Request, res: Response, p: Pending): Promise<string> => begin(req, res, p, clock.now() + TTL_MS),

    /** The form's pending sign-in, if it is this browser's, for this client, unexpired and unused: taken now. */
    async take(req: Request, sealed: string | undefined, clientId: string): Promise<TakenPending | undefined> {
      const p = unseal<Sealed>(key, PURPOSE, sealed);
      const nonce = readCookie(req, PENDING_COOKIE);
      if (!p || p.clientId !== clientId || !nonce || !safeEqual(hashToken(nonce), p.browser)) return undefined;
      if (!(await store.takePending(p.id))) return undefined;
      const pending: Pending = {
        userId: p.userId,
        amr: p.amr,
        clientId: p.clientId,
        ...(p.passwordExpiresAt !== undefined ? { passwordExpiresAt: p.passwordExpiresAt } : {}),
      };
      if (p.oldPassword !== undefined) pending.oldPassword = decrypt(secretKey(key, nonce), p.oldPassword);
      return { ...pending, again: (res) => begin(req, res, pending, p.exp) };
    },
  };
}

export type PendingSignIns = ReturnType<typeof pendingSignIns>;
