import { isIP } from 'node:net';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import { seal, unseal } from '../crypto/sealed.ts';
import type { User } from '../users/queries.ts';
import type { MfaQueries, StoredPasskey } from './mfa-queries.ts';

/**
 * @simplewebauthn/server, loaded at the first passkey ceremony: its certificate and CBOR parsers take
 * about a third of a second to load, which no server start should wait for.
 */
let library: Promise<typeof import('@simplewebauthn/server')> | undefined;
const webauthn = () => (library ??= import('@simplewebauthn/server'));

/** A ceremony must finish within this (WebAuthn's own default timeout is a minute). */
const CEREMONY_MS = 5 * 60 * 1000;

interface Challenge {
  challenge: string;
  /** Registration: the user registering. Authentication: the user expected, if known (second step). */
  userId?: string;
}

export interface PasskeyUse {
  user: string;
  /** The authenticator verified the user (PIN, biometrics): a factor in itself (SPEC 8: `mfa`). */
  userVerified: boolean;
}

/**
 * Passkeys (WebAuthn, SPEC 8) with @simplewebauthn/server. The relying party id is the host of
 * PUBLIC_URL; browsers refuse an IP address as one, so with PUBLIC_URL at an IP address passkeys are
 * off. The challenge travels with the page, signed (no server-side state), and is checked against the
 * one the authenticator signed; credentials are public data only.
 */
export function passkeyService(queries: MfaQueries, deps: { publicUrl: string; sealKey: Buffer; audit: AuditLog }) {
  const url = new URL(deps.publicUrl);
  const rpID = url.hostname;
  const origin = url.origin;
  const enabled = isIP(rpID.replace(/^\[|\]$/g, '')) === 0;

  const sealChallenge = (c: Challenge) => seal(deps.sealKey, 'webauthn', { ...c }, CEREMONY_MS);
  const openChallenge = (state: string | undefined) => unseal<Challenge>(deps.sealKey, 'webauthn', state);
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
      return { options, state: sealChallenge({ challenge: options.challenge, userId: user.id }) };
    },

    /** Verifies a new credential and keeps it; false when it does not verify. */
    async register(user: User, state: string | undefined, responseText: string | undefined, name: string, ctx: { ip?: string; requestId?: string } = {}): Promise<boolean> {
      const challenge = openChallenge(state);
      const response = parse<RegistrationResponseJSON>(responseText);
      if (!challenge || challenge.userId !== user.id || !response) return false;
      let verified;
      try {
        verified = await (await webauthn()).verifyRegistrationResponse({ response, expectedChallenge: challenge.challenge, expectedOrigin: origin, expectedRPID: rpID, requireUserVerification: false });
      } catch {
        return false;
      }
      if (!verified.verified) return false;
      const { credential } = verified.registrationInfo;
      const now = clock.now();
      await queries.insertPasskey({
        credentialId: credential.id,
        userId: user.id,
        publicKey: Buffer.from(credential.publicKey).toString('base64url'),
        counter: credential.counter,
        transports: credential.transports ?? [],
        name: name.trim().slice(0, 100) || 'Passkey',
        createdAt: now,
        lastUsedAt: null,
      });
      await deps.audit.record({ kind: 'mfa.passkey_added', userId: user.id, ip: ctx.ip, requestId: ctx.requestId });
      return true;
    },

    /**
     * Options for navigator.credentials.get(): the user's own credentials at a second step, none
     * (any discoverable credential of this site) for a sign-in without a username.
     */
    async authenticationOptions(userId?: string): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; state: string }> {
      const mine = userId ? await queries.passkeys(userId) : [];
      const options = await (await webauthn()).generateAuthenticationOptions({
        rpID,
        userVerification: 'preferred',
        allowCredentials: mine.map((p) => ({ id: p.credentialId, transports: p.transports as never })),
      });
      return { options, state: sealChallenge({ challenge: options.challenge, userId }) };
    },

    /** The credential's owner, before any check: who the brute-force policy counts the attempt against. */
    async ownerOf(responseText: string | undefined): Promise<string | undefined> {
      const response = parse<AuthenticationResponseJSON>(responseText);
      return response?.id ? (await queries.passkey(response.id))?.userId : undefined;
    },

    /** Verifies an assertion; the user it proves, or undefined. */
    async authenticate(state: string | undefined, responseText: string | undefined): Promise<PasskeyUse | undefined> {
      const challenge = openChallenge(state);
      const response = parse<AuthenticationResponseJSON>(responseText);
      if (!challenge || !response?.id) return undefined;
      const stored = await queries.passkey(response.id);
      if (!stored || (challenge.userId && challenge.userId !== stored.userId)) return undefined;
      // A discoverable credential names its user: it must be the one the credential was made for.
      if (response.response.userHandle && Buffer.from(response.response.userHandle, 'base64url').toString('utf8') !== stored.userId) return undefined;
      let verified;
      try {
        verified = await (await webauthn()).verifyAuthenticationResponse({
          response,
          expectedChallenge: challenge.challenge,
          expectedOrigin: origin,
          expectedRPID: rpID,
          credential: { id: stored.credentialId, publicKey: Buffer.from(stored.publicKey, 'base64url'), counter: stored.counter, transports: stored.transports },
          requireUserVerification: false,
        });
      } catch {
        return undefined;
      }
      if (!verified.verified) return undefined;
      await queries.usePasskey(stored.credentialId, verified.authenticationInfo.newCounter, clock.now());
      return { user: stored.userId, userVerified: verified.authenticationInfo.userVerified };
    },

    async remove(userId: string, credentialId: string, ctx: { ip?: string; requestId?: string } = {}): Promise<boolean> {
      if ((await queries.removePasskey(userId, credentialId)) === 0) return false;
      await deps.audit.record({ kind: 'mfa.passkey_removed', userId, ip: ctx.ip, requestId: ctx.requestId });
      return true;
    },
  };
}

export type PasskeyService = ReturnType<typeof passkeyService>;
