/**
 * A stored passkey and a WebAuthn challenge waiting for its answer.
 * A model module: types and their constants, no SQL; the queries and the services both import from here.
 */

export interface StoredPasskey {
  credentialId: string;
  userId: string;
  publicKey: string;
  counter: number;
  transports: string[];
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** A WebAuthn ceremony's challenge, kept until it is used once or expires. */
export interface StoredChallenge {
  challenge: string;
  purpose: 'register' | 'login';
  /** The user registering, or the user expected at a second step; null for a passkey alone. */
  userId: string | null;
  expiresAt: number;
}
