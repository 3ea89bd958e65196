import { isIP } from 'node:net';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
  VerifiedAuthenticationResponse,
  VerifiedRegistrationResponse,
} from '@simplewebauthn/server';
import type { AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import type { User } from '../users/model.ts';
import type { MfaQueries } from './mfa-queries.ts';
import type { StoredChallenge, StoredPasskey } from './model.ts';
import type { Origin } from '../audit/model.ts';

/**
 * @simplewebauthn/server, loaded at the first passkey ceremony: its certificate and CBOR parsers take
 * about a third of a second to load, which no server start should wait for.
 */
let library: Promise<typeof import('@simplewebauthn/server')> | undefined;
const webauthn = () => (library ??= import('@simplewebauthn/server'));

/** A ceremony must finish within this (WebAuthn's own default timeout is a minute). */
const CEREMONY_MS = 5 * 60 * 1000;

/** Why a passkey was not added, as the account page shows it. */
export const PASSKEY_NOT_ADDED = 'The passkey could not be added. Try again.';
export const PASSKEY_ALREADY_REGISTERED = 'This passkey is already registered.';
export const PASSKEY_REQUEST_EXPIRED = 'The passkey request expired or was used already. Try again.';

export interface PasskeyUse {
  user: string;
  /** The authenticator verified the user (PIN, biometrics): a factor in itself (docs/multi-factor-sign-in.md: `mfa`). */
  userVerified: boolean;
}

/**
 * Passkeys (WebAuthn, docs/multi-factor-sign-in.md) with @simplewebauthn/server. The relying party id is the host of
 * PUBLIC_URL; browsers refuse an IP address as one, so with PUBLIC_URL at an IP address passkeys are
 * off. Each challenge is stored when issued and taken once, before the answer is checked: a synced
 * passkey's signature counter stays 0, so the counter cannot tell a replayed assertion from a new
 * one, and only a spent challenge can. The page's `state` is the challenge itself (not a secret).
 * Credentials are public data only.
 */
/** A registration ceremony's answer as the account page posts it: the challenge's state, the browser's response, the name. */
export interface PasskeyRegistration {
  state: string | undefined;
  response: string | undefined;
  name: string;
}

export function passkeyService(
  queries: MfaQueries,
  deps: { publicUrl: string; audit: AuditLog /** Unused since challenges are stored. */; sealKey?: Buffer },
) {
  const url = new URL(deps.publicUrl);
  const rpID = url.hostname;
  const origin = url.origin;
  /** What every answer must have been made for: the challenge handed out, this server's origin and RP id. */
  const expected = (challenge: string) => ({ expectedChallenge: challenge, expectedOrigin: origin, expectedRPID: rpID });
  const enabled = isIP(rpID.replace(/^\[|\]$/g, '')) === 0;

  const issue = async (challenge: string, purpose: StoredChallenge['purpose'], userId: string | undefined): Promise<string> => {
    await queries.addChallenge({ challenge, purpose, userId: userId ?? null, expiresAt: clock.now() + CEREMONY_MS });
    return challenge;
  };
  const take = async (state: string | undefined, purpose: StoredChallenge['purpose']) =>
    state && state.length <= 128 ? queries.takeChallenge(state, purpose, clock.now()) : undefined;
  const parse = <T>(text: string | undefined): T | undefined => {
    try {
      return text ? (JSON.parse(text) as T) : undefined;
    } catch {
      return undefined;
    }
  };

  return {
    enabled,
    list: (userId: string): Promise<StoredPasskey[]> => queries.passkeys(userId),

    /** Options for navigator.credentials.create(): a discoverable credential, user verification preferred. */
    async registrationOptions(user: User): Promise<{ options: PublicKeyCredentialCreationOptionsJSON; state: string }> {
      const existing = await queries.passkeys(user.id);
      const options = await (await webauthn()).generateRegistrationOptions({
        rpName: 'Latchkey',
        rpID,
        userName: user.username,
        userDisplayName: user.displayName ?? user.username,
        userID: new TextEncoder().encode(user.id),
        attestationType: 'none',
        excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
        authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
      });
      return { options, state: await issue(options.challenge, 'register', user.id) };
    },

    /**
     * Verifies a new credential and keeps it. Undefined when it is added, else why not (a message for
     * the account page): a credential id registered already, or the same registration sent again,
     * is the user's mistake to be told, not a server error.
     */
    async register(
      user: User,
      { state, response: responseText, name }: PasskeyRegistration,
      from: Origin = {},
    ): Promise<string | undefined> {
      const response = parse<RegistrationResponseJSON>(responseText);
      if (!response?.id) return PASSKEY_NOT_ADDED;
      // Asked before the challenge is taken, so a registration sent again is told why, not "expired".
      if (await queries.passkey(response.id)) return PASSKEY_ALREADY_REGISTERED;
      const challenge = await take(state, 'register');
      if (!challenge || challenge.userId !== user.id) return PASSKEY_REQUEST_EXPIRED;
      let verified: VerifiedRegistrationResponse;
      try {
        verified = await (await webauthn()).verifyRegistrationResponse({
          response,
          ...expected(state!),
          requireUserVerification: false,
        });
      } catch {
        return PASSKEY_NOT_ADDED;
      }
      if (!verified.verified) return PASSKEY_NOT_ADDED;
      const { credential } = verified.registrationInfo;
      const now = clock.now();
      // The insert decides, not the question above: two registrations of one credential at once.
      const added = await queries.insertPasskey({
        credentialId: credential.id,
        userId: user.id,
        publicKey: Buffer.from(credential.publicKey).toString('base64url'),
        counter: credential.counter,
        transports: credential.transports ?? [],
        name: name.trim().slice(0, 100) || 'Passkey',
        createdAt: now,
        lastUsedAt: null,
      });
      if (!added) return PASSKEY_ALREADY_REGISTERED;
      await deps.audit.record({ kind: 'mfa.passkey_added', userId: user.id, ip: from.ip, requestId: from.requestId });
      return undefined;
    },

    /**
     * Options for navigator.credentials.get(): the user's own credentials at a second step, none
     * (any discoverable credential of this site) for a sign-in without a username. That one asks for
     * user verification: a passkey alone is a sign-in only when it verified the user (the sign-in
     * checks the flag whatever the browser did with this).
     */
    async authenticationOptions(userId?: string): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; state: string }> {
      const mine = userId ? await queries.passkeys(userId) : [];
      const options = await (await webauthn()).generateAuthenticationOptions({
        rpID,
        userVerification: userId ? 'preferred' : 'required',
        allowCredentials: mine.map((p) => ({ id: p.credentialId, transports: p.transports as never })),
      });
      return { options, state: await issue(options.challenge, 'login', userId) };
    },

    /** The credential's owner, before any check: who the brute-force policy counts the attempt against. */
    async ownerOf(responseText: string | undefined): Promise<string | undefined> {
      const response = parse<AuthenticationResponseJSON>(responseText);
      return response?.id ? (await queries.passkey(response.id))?.userId : undefined;
    },

    /**
     * Verifies an assertion; the user it proves, or undefined. The challenge is taken first: it is
     * good for one answer, right or wrong, so no assertion made for it is ever accepted twice.
     */
    async authenticate(state: string | undefined, responseText: string | undefined): Promise<PasskeyUse | undefined> {
      const response = parse<AuthenticationResponseJSON>(responseText);
      if (!response?.id) return undefined;
      const challenge = await take(state, 'login');
      if (!challenge) return undefined;
      const stored = await queries.passkey(response.id);
      if (!stored || (challenge.userId && challenge.userId !== stored.userId)) return undefined;
      // A discoverable credential names its user: it must be the one the credential was made for.
      if (response.response.userHandle && Buffer.from(response.response.userHandle, 'base64url').toString('utf8') !== stored.userId)
        return undefined;
      let verified: VerifiedAuthenticationResponse;
      try {
        verified = await (await webauthn()).verifyAuthenticationResponse({
          response,
          ...expected(state!),
          credential: {
            id: stored.credentialId,
            publicKey: Buffer.from(stored.publicKey, 'base64url'),
            counter: stored.counter,
            transports: stored.transports,
          },
          requireUserVerification: false,
        });
      } catch {
        return undefined;
      }
      if (!verified.verified) return undefined;
      await queries.usePasskey(stored.credentialId, verified.authenticationInfo.newCounter, clock.now());
      return { user: stored.userId, userVerified: verified.authenticationInfo.userVerified };
    },

    async remove(userId: string, credentialId: string, from: { ip?: string; requestId?: string } = {}): Promise<boolean> {
      if ((await queries.removePasskey(userId, credentialId)) === 0) return false;
      await deps.audit.record({ kind: 'mfa.passkey_removed', userId, ip: from.ip, requestId: from.requestId });
      return true;
    },
  };
}

export type PasskeyService = ReturnType<typeof passkeyService>;
