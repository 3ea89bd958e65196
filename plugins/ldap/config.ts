import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';

const scope = z.enum(['base', 'one', 'sub']).default('sub');

const ldapUrl = z
  .string()
  .regex(/^ldaps?:\/\/[^/?#]+\/?$/i, 'must be ldap://host[:port] or ldaps://host[:port] (no base DN in the URL)');

/** A CA bundle given inline (PEM) or as a file path, read once at start. */
const caBundle = z.string().transform((value, ctx) => {
  if (value.includes('-----BEGIN')) return value;
  if (!existsSync(value)) {
    ctx.addIssue({ code: 'custom', message: `CA file ${value} does not exist` });
    return z.NEVER;
  }
  return readFileSync(value, 'utf8');
});

/** How nested groups are resolved. */
const nested = z.enum(['recursive', 'matchingRule', 'none']);

/** The `config:` of an `ldap` backend (docs/identity-backends.md). Every key is described there. */
export const ldapConfig = z
  .object({
    /** One URL or a list tried in turn: a dead server fails over to the next. */
    url: z.union([ldapUrl, z.array(ldapUrl).min(1)]).transform((v) => (Array.isArray(v) ? v : [v])),
    /** Upgrade `ldap://` connections with StartTLS before any bind. @default false */
    startTLS: z.boolean().default(false),
    tls: z
      .object({
        /** CA bundle (PEM text or a file path) that signed the directory's certificate. */
        ca: caBundle.optional(),
        /** @default true; false only for a lab directory. */
        rejectUnauthorized: z.boolean().default(true),
      })
      .strict()
      .default({ rejectUnauthorized: true }),
    /** Service account used to search; omitted means anonymous searches. */
    bindDN: z.string().min(1).optional(),
    bindPassword: z.string().min(1).optional(),
    /** Name of an environment variable holding the service password, to keep it out of the config file. */
    bindPasswordEnv: z.string().min(1).optional(),
    /** Bound on each step: connect, StartTLS, bind, search, and waiting for a pooled connection. @default 5000 */
    timeoutMs: z.number().int().min(100).max(120_000).default(5000),
    /** Connections kept for searches, and as many again for users' binds. @default 4 */
    poolSize: z.number().int().min(1).max(64).default(4),
    userSearch: z
      .object({
        baseDN: z.string().min(1),
        /** `{username}` is replaced by the typed name, escaped per RFC 4515. */
        filter: z
          .string()
          .refine((f) => f.includes('{username}'), 'must contain {username}')
          .refine((f) => f.startsWith('(') && f.endsWith(')'), 'must be a parenthesised LDAP filter')
          .default('(uid={username})'),
        scope,
        usernameAttr: z.string().min(1).default('uid'),
        /** Stable id: `entryUUID` (OpenLDAP), `objectGUID` (AD, shown in its usual string form). */
        idAttr: z.string().min(1).default('entryUUID'),
        emailAttr: z.string().min(1).default('mail'),
        nameAttr: z.string().min(1).default('cn'),
      })
      .strict(),
    /** Omitted: groups are read from the user entry's `memberOf`. */
    groupSearch: z
      .object({
        baseDN: z.string().min(1),
        filter: z
          .string()
          .refine((f) => f.startsWith('(') && f.endsWith(')'), 'must be a parenthesised LDAP filter')
          .default('(objectClass=groupOfNames)'),
        scope,
        /** Attribute of a group that holds its members' DNs. */
        memberAttr: z.string().min(1).default('member'),
        nameAttr: z.string().min(1).default('cn'),
        /** `recursive` searches level by level (OpenLDAP), `matchingRule` asks AD for the transitive closure. */
        nested: nested.default('recursive'),
      })
      .strict()
      .optional(),
    /** Members of these groups (by name or DN, case-insensitive) get the `admin` role. */
    adminGroups: z.array(z.string().min(1)).default([]),
    /**
     * How passwords are written (docs/identity-backends.md): `openldap`, the Password Modify extended operation with the
     * ppolicy control; `activeDirectory`, `unicodePwd`. @default `activeDirectory` when `idAttr` is
     * `objectGUID`, else `openldap`.
     */
    directoryType: z.enum(['openldap', 'activeDirectory']).optional(),
    /** Users change their own password (account page, expired or must-change at sign-in), bound as themselves. @default false */
    passwordChange: z.boolean().default(false),
    /** The service account sets new passwords (reset by mail, the admin API's `setUserPassword`). @default false */
    passwordReset: z.boolean().default(false),
    /** A user whose password expires within this many days is told so after signing in. @default 14 */
    passwordExpiryWarningDays: z.number().int().min(0).max(365).default(14),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.bindPassword && c.bindPasswordEnv) {
      ctx.addIssue({ code: 'custom', path: ['bindPasswordEnv'], message: 'give bindPassword or bindPasswordEnv, not both' });
    }
    if (c.bindPasswordEnv && !process.env[c.bindPasswordEnv]) {
      ctx.addIssue({ code: 'custom', path: ['bindPasswordEnv'], message: `environment variable ${c.bindPasswordEnv} is not set` });
    }
    if (c.bindDN && !c.bindPassword && !c.bindPasswordEnv) {
      ctx.addIssue({ code: 'custom', path: ['bindPassword'], message: 'bindDN needs bindPassword or bindPasswordEnv' });
    }
    if (directoryTypeOf(c) === 'activeDirectory' && (c.passwordChange || c.passwordReset) && !c.startTLS && c.url.some((u) => !u.toLowerCase().startsWith('ldaps:'))) {
      // AD refuses unicodePwd over a plain connection; sending a password in the clear is refused here first.
      ctx.addIssue({ code: 'custom', path: ['passwordChange'], message: 'Active Directory writes passwords only over ldaps:// or startTLS: true' });
    }
    if (c.passwordReset && !c.bindDN) {
      ctx.addIssue({ code: 'custom', path: ['passwordReset'], message: 'passwordReset writes with the service account: give bindDN' });
    }
    if (c.startTLS && c.url.some((u) => u.toLowerCase().startsWith('ldaps:'))) {
      ctx.addIssue({ code: 'custom', path: ['startTLS'], message: 'StartTLS applies to ldap:// URLs; ldaps:// is already TLS' });
    }
  });

export type LdapConfig = z.infer<typeof ldapConfig>;

/** The service account's password, wherever the config put it. */
export const servicePassword = (c: LdapConfig): string | undefined =>
  c.bindPassword ?? (c.bindPasswordEnv ? process.env[c.bindPasswordEnv] : undefined);

/** Which directory's way of writing passwords the backend uses (see `directoryType`). */
export const directoryTypeOf = (c: Pick<LdapConfig, 'directoryType' | 'userSearch'>): 'openldap' | 'activeDirectory' =>
  c.directoryType ?? (c.userSearch.idAttr.toLowerCase() === 'objectguid' ? 'activeDirectory' : 'openldap');
