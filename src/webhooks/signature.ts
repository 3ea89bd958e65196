import { createHmac, randomBytes } from 'node:crypto';

/** The Standard Webhooks secret's prefix; the rest is the key, base64. */
export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` and 256 random bits, base64 (Standard Webhooks, "Signature scheme"). */
export const newSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;

/**
 * The headers of a signed message (Standard Webhooks 1.0): its id, the time it was signed (Unix
 * seconds), and `v1,` with the base64 HMAC-SHA256 of `id.timestamp.body` keyed with the secret's
 * decoded base64 part. A receiver checks the signature and that the time is recent, so a captured
 * message cannot be replayed later.
 */
export function signedHeaders(secret: string, id: string, timestamp: number, body: string): Record<string, string> {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` };
}
