import { z } from 'zod';
import { sourceId } from '../../config/schema.ts';

/**
 * The keys every kind of upstream shares: who it is, and what Latchkey decides about its users
 * (docs/upstream-identity-providers.md). A kind's schema extends this one.
 */
export const upstreamBase = z.object({
  id: sourceId,
  /** Shown as "Sign in with <name>". */
  name: z.string().min(1),
  /** Upstream groups whose members get Latchkey's `admin` role. @default [] */
  adminGroups: z.array(z.string().min(1)).default([]),
  /** Email domains accepted (`example.com`); unset accepts every user the upstream signs in. */
  allowedDomains: z
    .array(
      z
        .string()
        .min(1)
        .transform((d) => d.toLowerCase().replace(/^@/, '')),
    )
    .min(1)
    .optional(),
  /** Take the upstream's `amr` containing `mfa` as Latchkey's second factor. @default false */
  trustMfa: z.boolean().default(false),
  /**
   * Give the upstream's users the username `<name>@<id>`, so that none can take the name of a local
   * or directory user at an app that keys on usernames (a SAML NameID or `uid`). Turn it off only
   * when no other source can hold the upstream's names. @default true
   */
  qualifyUsernames: z.boolean().default(true),
});

export type UpstreamPolicy = Pick<z.infer<typeof upstreamBase>, 'adminGroups' | 'allowedDomains' | 'trustMfa' | 'qualifyUsernames'>;

/** An upstream user's username under the upstream's policy: `name@<id>` unless the operator opted out. */
export const upstreamUsername = (upstreamId: string, policy: Pick<UpstreamPolicy, 'qualifyUsernames'>, name: string): string =>
  policy.qualifyUsernames ? `${name}@${upstreamId}` : name;
