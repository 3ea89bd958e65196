import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { isoCBOR } from '@simplewebauthn/server/helpers';

const b64url = (b: Uint8Array | Buffer | string) => Buffer.from(b).toString('base64url');
const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest();

/** Authenticator data flags (WebAuthn §6.1): user present, user verified, backup eligible and state, attested data. */
const UP = 0x01;
const UV = 0x04;
const BE = 0x08;
const BS = 0x10;
const AT = 0x40;

/**
 * A software passkey in the test process: one ES256 credential (node:crypto), with `none`
 * attestation, whose signature counter stays 0 as a synced passkey's does, so the counter cannot
 * tell a replayed assertion from a new one. It answers the server's options the way a browser's
 * `navigator.credentials` would, as the JSON the page's script posts. It ignores
 * `excludeCredentials`, as a careless or hostile client may.
 */
export class SoftAuthenticator {
  readonly credentialId = randomBytes(16);
  private readonly keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  private userHandle?: string;

  /** `origin` is the page's origin, as the browser writes it into the client data. */
  constructor(private readonly origin: string) {}

  get id(): string {
    return b64url(this.credentialId);
  }

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin: this.origin, crossOrigin: false }));
  }

  /** An answer to navigator.credentials.create(): the same credential every time it is asked. */
  register(options: PublicKeyCredentialCreationOptionsJSON, o: { userVerified?: boolean } = {}): RegistrationResponseJSON {
    this.userHandle = options.user.id;
    const jwk = this.keys.publicKey.export({ format: 'jwk' });
    const cose = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
    const length = Buffer.alloc(2);
    length.writeUInt16BE(this.credentialId.length);
    const authData = Buffer.concat([
      this.header(options.rp.id!, AT | (o.userVerified === false ? 0 : UV)),
      Buffer.alloc(16),
      length,
      this.credentialId,
      cose,
    ]);
    const attestationObject = isoCBOR.encode(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]) as never,
    );
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: b64url(this.clientData('webauthn.create', options.challenge)),
        attestationObject: b64url(attestationObject),
        transports: ['internal'],
      },
    };
  }

  /** An answer to navigator.credentials.get(), with or without user verification (a PIN, a fingerprint). */
  assert(options: PublicKeyCredentialRequestOptionsJSON, o: { userVerified?: boolean } = {}): AuthenticationResponseJSON {
    const clientData = this.clientData('webauthn.get', options.challenge);
    const authData = this.header(options.rpId!, o.userVerified === false ? 0 : UV);
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), this.keys.privateKey as KeyObject);
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: b64url(clientData),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: this.userHandle,
      },
    };
  }

  /** rpIdHash, flags and a signature counter of 0. */
  private header(rpId: string, flags: number): Buffer {
    return Buffer.concat([sha256(rpId), Buffer.from([UP | BE | BS | flags]), Buffer.alloc(4)]);
  }
}
