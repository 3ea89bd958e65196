import { randomInt } from 'node:crypto';
import { hmac } from '../crypto/secrets.ts';

/** Letters and digits that cannot be misread for one another (no 0/o, 1/l/i). */
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
export const RECOVERY_CODE_COUNT = 10;

/** `xxxxx-xxxxx`: ten characters of a 31-letter alphabet, about 50 bits. */
export function newRecoveryCode(): string {
  const chars = Array.from({ length: 10 }, () => ALPHABET[randomInt(ALPHABET.length)]);
  return `${chars.slice(0, 5).join('')}-${chars.slice(5).join('')}`;
}

/** What is stored: a keyed hash of the code as typed, without case, spaces or the dash. */
export const recoveryCodeHash = (key: Buffer, typed: string): string => hmac(key, typed.toLowerCase().replace(/[\s-]/g, ''));
