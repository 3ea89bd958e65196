/**
 * Invitations (docs/scim-provisioning.md "How SCIM users sign in"): a user a SCIM client creates
 * without a password, in a backend with `invite: true`, is mailed a link to set one. The link is a
 * reset link (the same page, the same single use, the same remedies end it) that lives longer, since
 * the person did not ask for it and may read it days later. The invitations wait in the database
 * (`scim_invitations`, written with the user) until mailed, so a restart loses none
 * (src/scim/invitations.ts); the link itself is made only when the mail goes out.
 */
import type { User } from '../users/model.ts';
import type { Mail } from './mailer.ts';

/** An invitation's link is good for 7 days. Fixed, not a setting, as a reset link's 15 minutes are. */
export const INVITATION_TTL_MS = 7 * 24 * 3600_000;

/**
 * Whether `user` is one to invite: enabled, with an email, no password yet, in a backend that invites.
 * Anyone else gets nothing (a user the client gave a password, a deprovisioned one, one without an address).
 */
export const toInvite = (user: User, invites: (backend: string) => boolean): boolean =>
  !user.disabled && !!user.email && !user.passwordHash && invites(user.backend);

/** The invitation's words: who invites, the account, what to do, and how long the link lasts. */
export function invitationMail(user: User, link: string, publicUrl: string): Mail {
  const host = new URL(publicUrl).host;
  return {
    to: user.email!,
    subject: `You have been invited to ${host}`,
    text: `You have been invited to ${host}, with the account "${user.username}".

To set your password, open this link within 7 days. It works once:
${link}

Then sign in as "${user.username}" with that password wherever ${host} asks you to.
If you did not expect this mail, ignore it: nothing happens until a password is set.
`,
  };
}
