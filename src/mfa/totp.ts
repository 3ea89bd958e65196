import { Secret, TOTP } from 'otpauth';

/** RFC 6238 as docs/multi-factor-sign-in.md fixes it: SHA-1, 6 digits, 30 s steps, one step of drift either way. */
const PERIOD = 30;
const settings = { algorithm: 'SHA1', digits: 6, period: PERIOD } as const;

export const newTotpSecret = (): string => new Secret({ size: 20 }).base32;

/** The `otpauth://` URI an authenticator app reads from the QR code. */
export const totpUri = (secret: string, issuer: string, account: string): string =>
  new TOTP({ ...settings, issuer, label: account, secret: Secret.fromBase32(secret) }).toString();

/** The time step a code belongs to, within one step of `now`; undefined when it matches none. */
export function matchingStep(secret: string, code: string, now: number): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined;
  const delta = new TOTP({ ...settings, secret: Secret.fromBase32(secret) }).validate({ token: code, timestamp: now, window: 1 });
  return delta === null ? undefined : Math.floor(now / 1000 / PERIOD) + delta;
}
