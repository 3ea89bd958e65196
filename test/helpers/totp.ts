import { Secret, TOTP } from 'otpauth';

/** The code an authenticator app shows for `secret` at `at` (ms; the server's time in tests). */
export const codeAt = (secret: string, at: number): string =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: at });
