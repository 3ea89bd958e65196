import type { AccessDecision, AccessPolicy, AppRole, Member } from './model.ts';

/** Group names and DNs compare without case, as directories compare them. */
export const groupKey = (name: string) => name.toLowerCase();

/** The first of `wanted` the member's groups hold, or undefined. */
function heldGroup(member: Pick<Member, 'groups'>, wanted: readonly string[]): string | undefined {
  if (wanted.length === 0) return undefined;
  const held = new Set(member.groups.map(groupKey));
  return wanted.find((g) => held.has(groupKey(g)));
}

/**
 * Whether `member` may use an application with `policy` (docs/access-and-claims.md): everyone, or, for
 * an assigned application, a user it names, a member of a group it names, or a user of a backend or
 * upstream it names. A disabled user never may.
 */
export function decideAccess(policy: AccessPolicy, member: Member): AccessDecision {
  if (member.disabled) return { allowed: false, reason: 'disabled' };
  if (policy.mode === 'everyone') return { allowed: true, reason: 'everyone' };
  if (policy.users.includes(member.id)) return { allowed: true, reason: 'user' };
  const group = heldGroup(member, policy.groups);
  if (group !== undefined) return { allowed: true, reason: `group:${group}` };
  if (policy.backends.includes(member.backend)) return { allowed: true, reason: `backend:${member.backend}` };
  return { allowed: false, reason: 'not_assigned' };
}

/** The member's roles of one application: each role naming the user or a group they hold, once, in the roles' order. */
export function rolesOf(roles: readonly AppRole[], member: Pick<Member, 'id' | 'groups'>): string[] {
  const out: string[] = [];
  for (const role of roles) {
    if (out.includes(role.name)) continue;
    if (role.users.includes(member.id) || heldGroup(member, role.groups) !== undefined) out.push(role.name);
  }
  return out;
}
