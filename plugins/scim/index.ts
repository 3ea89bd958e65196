import { z } from 'zod';
import { defineIdentityPlugin, localPasswordBackend } from '../../src/identity/plugin-kit.ts';

/**
 * The `config:` of a `scim` backend (docs/scim-provisioning.md "Setting up a SCIM backend"). Strict: a
 * misspelt key is refused at start, naming it, never taken for a setting left off.
 */
export const scimConfig = z
  .object({
    /** Mail a link to set a password to a user created active, with an email and no password. @default false */
    invite: z.boolean().default(false),
    /** The upstream whose users sign in as the SCIM user of the same userName (or verified email). */
    linkUpstream: z.string().min(1).optional(),
  })
  .strict();

/**
 * Users a SCIM client pushes (docs/scim-provisioning.md): their records are Latchkey's own, written by
 * the `/scim/v2` endpoint, so the password check reads them as the database backend does (a user
 * deprovisioned by `active: false` or DELETE is refused after a right password). There is nothing to
 * list or refresh: the client tells Latchkey of every change.
 */
export default defineIdentityPlugin({
  id: 'scim',
  configSchema: scimConfig,
  create: (_config, ctx) => localPasswordBackend(ctx),
});
