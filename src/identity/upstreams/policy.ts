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
  /** Upstream groups whose members get Latchkey's `admin` role: `adminRoleGroups: { admin: [...] }`. @default [] */
  adminGroups: z.array(z.string().min(1)).default([]),
  /**
   * Admin roles given by upstream groups (docs/admin-api.md "Roles and permissions"): `{ helpdesk:
   * [<group>, …] }`, built-in or custom roles. With this or `adminGroups` set, the upstream's groups
   * decide its users' roles at each sign-in; with neither, the administrators do. @default {}
   */
  adminRoleGroups: z
    .record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be a role name (1 to 64 of A-Z a-z 0-9 _ . -)'), z.array(z.string().min(1)))
    .default({}),
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

export type UpstreamPolicy = Pick<
  z.infer<typeof upstreamBase>,
  'adminGroups' | 'adminRoleGroups' | 'allowedDomains' | 'trustMfa' | 'qualifyUsernames'
>;

/**
 * The roles an upstream's groups give (`adminGroups`, `adminRoleGroups`); undefined when neither is
 * configured, so the record's roles stay the administrators'.
 */
export function upstreamRoles(
  policy: Pick<UpstreamPolicy, 'adminGroups' | 'adminRoleGroups'>,
  groups: readonly string[],
): string[] | undefined {
  const giving = [['admin', policy.adminGroups] as const, ...Object.entries(policy.adminRoleGroups ?? {})];
  if (giving.every(([, of]) => of.length === 0)) return undefined;
  return [...new Set(giving.filter(([, of]) => of.some((g) => groups.includes(g))).map(([role]) => role))];
}

/** An upstream user's username under the upstream's policy: `name@<id>` unless the operator opted out. */
export const upstreamUsername = (upstreamId: string, policy: Pick<UpstreamPolicy, 'qualifyUsernames'>, name: string): string =>
  policy.qualifyUsernames ? `${name}@${upstreamId}` : name;
