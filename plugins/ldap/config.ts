import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { readKeytab } from '../../src/identity/plugin-kit.ts';

const scope = z.enum(['base', 'one', 'sub']).default('sub');

const ldapUrl = z.string().regex(/^ldaps?:\/\/[^/?#]+\/?$/i, 'must be ldap://host[:port] or ldaps://host[:port] (no base DN in the URL)');

/** A CA bundle given inline (PEM) or as a file path, read once at start. */
const caBundle = z.string().transform((value, ctx) => {
  if (value.includes('-----BEGIN')) return value;
  if (!existsSync(value)) {
    ctx.addIssue({ code: 'custom', message: `CA file ${value} does not exist` });
    return z.NEVER;
  }
  return readFileSync(value, 'utf8');
});

/**
 * Desktop single sign-on (docs/identity-backends.md "Desktop single sign-on"): Kerberos tickets for the
 * HTTP service principal sign the directory's users in. Checked at start: the keytab must be readable and
 * hold the principal's keys.
 */
const kerberos = z
  .object({
    keytab: z.string().min(1).meta({
      description:
        "The keytab holding the service principal's keys (`ktpass` on a domain controller, or `samba-tool domain exportkeytab`), readable by Latchkey only.",
    }),
    servicePrincipal: z
      .string()
      .regex(/^HTTP\/[^/@\s]+@[^/@\s]+$/, 'must be HTTP/<host>@REALM, the host being the one of PUBLIC_URL')
      .meta({ description: "`HTTP/<host of PUBLIC_URL>@REALM`: the SPN registered on Latchkey's service account (`setspn -S`)." }),
    realm: z
      .string()
      .regex(/^[^/@\s]+$/, 'must be a realm name, such as CORP.EXAMPLE.COM')
      .meta({ description: "The directory's Kerberos realm (AD: the domain's DNS name in capitals); users of another realm are refused." }),
    principalAttribute: z.enum(['userPrincipalName', 'sAMAccountName']).default('userPrincipalName').meta({
      description:
        "How a ticket's client principal finds the user: `userPrincipalName` (the entry whose UPN is the principal, compared without case) or `sAMAccountName` (`name@REALM`: the entry whose sAMAccountName is `name`).",
    }),
  })
  .strict()
  .superRefine((k, ctx) => {
    if (k.servicePrincipal.split('@')[1]!.toUpperCase() !== k.realm.toUpperCase())
      ctx.addIssue({ code: 'custom', path: ['servicePrincipal'], message: `must be in the realm ${k.realm}` });
    let held: string[];
    try {
      held = readKeytab(k.keytab).map((e) => e.principal.toLowerCase());
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: ['keytab'], message: (err as Error).message });
      return;
    }
    if (!held.includes(k.servicePrincipal.toLowerCase()))
      ctx.addIssue({ code: 'custom', path: ['keytab'], message: `${k.keytab} holds no key of ${k.servicePrincipal}` });
  });

/** How nested groups are resolved. */
const nested = z.enum(['recursive', 'matchingRule', 'none']);

/**
 * The `config:` of an `ldap` backend. Each key's `.meta()` is its row in docs/identity-backends.md
 * (scripts/config-docs.ts writes the table from it).
 */
export const ldapConfig = z
  .object({
    url: z
      .union([ldapUrl, z.array(ldapUrl).min(1)])
      .transform((v) => (Array.isArray(v) ? v : [v]))
      .meta({
        typeText: 'URL or list of URLs',
        description:
          '`ldap://host[:port]` or `ldaps://host[:port]` (no base DN), or a list of them tried in turn: a dead server fails over to the next (below).',
      }),
    startTLS: z.boolean().default(false).meta({ description: 'Upgrade `ldap://` connections with StartTLS before any bind.' }),
    tls: z
      .object({
        ca: caBundle.optional().meta({
          defaultText: 'system CAs',
          description: "The CA bundle that signed the directory's certificate: PEM text or a file path, read once at start.",
        }),
        rejectUnauthorized: z.boolean().default(true).meta({ description: '`false` only for a lab directory.' }),
      })
      .strict()
      .default({ rejectUnauthorized: true }),
    bindDN: z.string().min(1).optional().meta({ defaultText: 'anonymous', description: 'The service account that searches.' }),
    bindPassword: z.string().min(1).optional().meta({ description: "The service account's password; or `bindPasswordEnv`." }),
    bindPasswordEnv: z.string().min(1).optional().meta({
      description: "The name of an environment variable holding the service account's password, to keep it out of the config file.",
    }),
    timeoutMs: z.number().int().min(100).max(120_000).default(5000).meta({
      unit: 'milliseconds',
      description: 'The bound on every step: connect, StartTLS, bind, each search, and waiting for a pooled connection.',
    }),
    poolSize: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .meta({ description: "Connections kept for searches, and as many again for users' binds." }),
    userSearch: z
      .object({
        baseDN: z.string().min(1).meta({ description: 'Where the users are.' }),
        filter: z
          .string()
          .refine((f) => f.includes('{username}'), 'must contain {username}')
          .refine((f) => f.startsWith('(') && f.endsWith(')'), 'must be a parenthesised LDAP filter')
          .default('(uid={username})')
          .meta({ description: '`{username}` is replaced by the typed name, escaped per RFC 4515.' }),
        scope: scope.meta({ description: 'The search scope under `baseDN`.' }),
        usernameAttr: z.string().min(1).default('uid').meta({ description: 'The name shown (`preferred_username`, `/me` `uid`).' }),
        idAttr: z.string().min(1).default('entryUUID').meta({
          description:
            'The stable id behind `userid`: `entryUUID` (OpenLDAP, 389 DS), `objectGUID` (AD: read as binary and shown as `xxxxxxxx-xxxx-…`, as Windows does).',
        }),
        emailAttr: z.string().min(1).default('mail').meta({ description: 'The `email` claim.' }),
        nameAttr: z.string().min(1).default('cn').meta({ description: 'The `name` claim, `/me` `displayName`.' }),
      })
      .strict(),
    groupSearch: z
      .object({
        baseDN: z.string().min(1).meta({ description: 'Where the groups are.' }),
        filter: z
          .string()
          .refine((f) => f.startsWith('(') && f.endsWith(')'), 'must be a parenthesised LDAP filter')
          .default('(objectClass=groupOfNames)')
          .meta({ description: 'ANDed with the membership test.' }),
        scope: scope.meta({ description: 'The search scope under `baseDN`.' }),
        memberAttr: z
          .string()
          .min(1)
          .default('member')
          .meta({ description: "The attribute of a group that holds its members' DNs (`uniqueMember` for groupOfUniqueNames)." }),
        nameAttr: z.string().min(1).default('cn').meta({ description: 'The group name in the `groups` claim.' }),
        nested: nested.default('recursive').meta({
          description:
            "`recursive`: one search per level of nesting (OpenLDAP; cycles are cut, at most 10 levels); `matchingRule`: AD's `LDAP_MATCHING_RULE_IN_CHAIN` (1.2.840.113556.1.4.1941) in one search; `none`: direct groups only.",
        }),
      })
      .strict()
      .optional()
      .meta({
        description: "How groups are found. Left out, a user's groups are the `memberOf` values of their entry (direct memberships only).",
      }),
    extraAttributes: z
      .array(
        z.string().regex(/^([A-Za-z][A-Za-z0-9-]*|\d+(\.\d+)+)$/, 'must be an LDAP attribute name (letters, digits and hyphens) or an OID'),
      )
      .max(64)
      .default([])
      .meta({
        description:
          "Attributes of the user's entry kept on their record at each sign-in and refresh (`department`, `employeeNumber`, `title`, …), for claim and attribute mappings ([Access and claims](access-and-claims.md)); read with the entry, no extra search. Under the name given here: one value as a string, several as a list; an attribute the entry lacks is left out. A value that is not UTF-8 text (or holds control characters: a photo, a certificate, `objectSid`) is kept base64-encoded; `objectGUID` as its GUID text, as `idAttr` reads it.",
      }),
    adminGroups: z
      .array(z.string().min(1))
      .default([])
      .meta({ description: 'Groups (by name or DN, case-insensitive) whose members get the `admin` role, that is the GraphQL admin API.' }),
    adminRoleGroups: z
      .record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be a role name (1 to 64 of A-Z a-z 0-9 _ . -)'), z.array(z.string().min(1)))
      .default({})
      .meta({
        description:
          "Admin roles given by groups: `{ helpdesk: [<group>, …], <role>: […] }`, each group by name or DN (case-insensitive); a built-in role (`admin`, `helpdesk`, `auditor`, `app-owner`) or a custom one ([Roles and permissions](admin-api.md#roles-and-permissions)). `adminGroups` is `{ admin: [...] }`. With either set, the directory's groups decide its users' roles at each sign-in and sync; with neither, the roles are the administrators'.",
      }),
    directoryType: z.enum(['openldap', 'activeDirectory']).optional().meta({
      defaultText: '`activeDirectory` when `idAttr` is `objectGUID`, else `openldap`',
      description:
        'How passwords are written: Password Modify with the ppolicy control (`openldap`) or `unicodePwd` (`activeDirectory`); see [Passwords in the directory](#passwords-in-the-directory).',
    }),
    passwordChange: z.boolean().default(false).meta({
      description:
        'Users change their own password in the directory, bound as themselves (the account page; the sign-in step when it expired or must change); see [Passwords in the directory](#passwords-in-the-directory).',
    }),
    passwordReset: z
      .boolean()
      .default(false)
      .meta({ description: "The service account sets new passwords (reset by mail, the admin API's `setUserPassword`)." }),
    passwordExpiryWarningDays: z
      .number()
      .int()
      .min(0)
      .max(365)
      .default(14)
      .meta({ unit: 'days', description: 'A password that expires within this many days is told after signing in.' }),
    kerberos: kerberos.optional().meta({
      description:
        'Desktop single sign-on ([below](#desktop-single-sign-on-kerberos)): browsers on domain-joined computers sign in with their Kerberos ticket (SPNEGO), without a password.',
    }),
    sync: z
      .object({
        interval: z
          .number()
          .int()
          .min(0)
          .max(86_400)
          .refine((s) => s === 0 || s >= 10, 'must be 0 (off) or at least 10 seconds')
          .default(0)
          .meta({
            unit: 'seconds',
            description:
              'Seconds between directory sync passes; `0`: only when asked (`latchkey sync <backend>`, GraphQL `syncBackend`). 300 is a good interval: a leaver loses everything within five minutes. At most a day.',
          }),
        pageSize: z.number().int().min(1).max(5000).default(500).meta({
          description:
            "Entries per page of the paged search (RFC 2696) that reads the directory. Active Directory answers at most its `MaxPageSize` (1,000 by default) per page whatever is asked; OpenLDAP's and 389 DS's total size limits must let the service account read every user (see [Directory sync](directory-sync.md#reading-the-directory)).",
        }),
        maxLeaverShare: z.number().min(0).max(1).default(0.1).meta({
          description:
            "A pass that would deprovision more than this share of the backend's users (a wrong base DN, a filter typo) deprovisions nobody and says so (one leaver alone is never refused); `latchkey sync <backend> --allow-mass-leave` applies it after a human looked.",
        }),
      })
      .strict()
      .default({ interval: 0, pageSize: 500, maxLeaverShare: 0.1 })
      .meta({
        description:
          'Directory sync ([Directory sync](directory-sync.md)): reading every user on an interval, to find joiners, movers and leavers.',
      }),
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
    if (
      directoryTypeOf(c) === 'activeDirectory' &&
      (c.passwordChange || c.passwordReset) &&
      !c.startTLS &&
      c.url.some((u) => !u.toLowerCase().startsWith('ldaps:'))
    ) {
      // AD refuses unicodePwd over a plain connection; sending a password in the clear is refused here first.
      ctx.addIssue({
        code: 'custom',
        path: ['passwordChange'],
        message: 'Active Directory writes passwords only over ldaps:// or startTLS: true',
      });
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
