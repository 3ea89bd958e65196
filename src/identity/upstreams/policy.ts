import { z } from 'zod';

/**
 * The keys every kind of upstream shares: who it is, and what Latchkey decides about its users
 * (SPEC 13). A kind's schema extends this one.
 */
export const upstreamBase = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/i, 'must be letters, digits, "-" or "_"'),
  /** Shown as "Sign in with <name>". */
  name: z.string().min(1),
  /** Upstream groups whose members get Latchkey's `admin` role. @default [] */
  adminGroups: z.array(z.string().min(1)).default([]),
  /** Email domains accepted (`example.com`); unset accepts every user the upstream signs in. */
  allowedDomains: z.array(z.string().min(1).transform((d) => d.toLowerCase().replace(/^@/, ''))).min(1).optional(),
  /** Take the upstream's `amr` containing `mfa` as Latchkey's second factor. @default false */
  trustMfa: z.boolean().default(false),
});

export type UpstreamPolicy = Pick<z.infer<typeof upstreamBase>, 'adminGroups' | 'allowedDomains' | 'trustMfa'>;
