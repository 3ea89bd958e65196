import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { parseNetwork } from '../outbound/address-rules.ts';

/**
 * The id of an identity backend or an upstream: stored as users' `backend`, and part of an upstream
 * user's username (`name@<id>`), so it is kept short and plain.
 */
export const sourceId = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/i, 'must be letters, digits, "-" or "_"');

/** One identity backend in the chain: which plugin, and the plugin's own config (validated by the plugin). */
const backendEntry = z.strictObject({
  id: sourceId.meta({
    description: "The backend's id: stored as its users' `backend`, shown as `User.backend`; letters, digits, `-` and `_`, at most 63.",
  }),
  plugin: z.string().min(1).meta({
    description:
      '`database` (built in), `ldap`, `scim` ([SCIM provisioning](scim-provisioning.md)), a folder under `plugins/`, or an npm package ([Identity backends](identity-backends.md)).',
  }),
  config: z.record(z.string(), z.unknown()).default({}).meta({
    description:
      "The plugin's own keys, validated by the plugin at start (LDAP: [its table](identity-backends.md#ldap-and-active-directory-plugin-ldap)).",
  }),
});

/** A boolean that an environment variable can set as `true` / `false`. */
const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
/**
 * One upstream identity provider (docs/upstream-identity-providers.md): its id, its label and its kind here; everything else is the
 * kind's own config, validated by the upstream plugin when the server starts (src/identity/upstreams/).
 */
const upstreamEntry = z
  .strictObject({
    id: sourceId.meta({ description: "The upstream's id: its users' usernames end in `@<id>`; unique among backends and upstreams." }),
    name: z.string().min(1).meta({ description: 'The label of "Sign in with <name>" on the login page.' }),
    kind: z.string().min(1).default('oidc').meta({
      description:
        "The upstream plugin. Every other key of the entry is the kind's own config ([Upstream identity providers](upstream-identity-providers.md)).",
    }),
  })
  .loose();

/** RFC 5424's facility numbers, by the names syslog daemons give them. */
export const SYSLOG_FACILITIES = {
  kern: 0,
  user: 1,
  mail: 2,
  daemon: 3,
  auth: 4,
  syslog: 5,
  lpr: 6,
  news: 7,
  uucp: 8,
  cron: 9,
  authpriv: 10,
  ftp: 11,
  ntp: 12,
  security: 13,
  console: 14,
  local0: 16,
  local1: 17,
  local2: 18,
  local3: 19,
  local4: 20,
  local5: 21,
  local6: 22,
  local7: 23,
} as const;
export type SyslogFacility = keyof typeof SYSLOG_FACILITIES;

/** PEM given inline or as a file path, read once at start (a TLS CA, certificate or key). */
const pemOrFile = z.string().transform((value, ctx) => {
  if (value.includes('-----BEGIN')) return value;
  if (!existsSync(value)) {
    ctx.addIssue({ code: 'custom', message: `file ${value} does not exist` });
    return z.NEVER;
  }
  return readFileSync(value, 'utf8');
});

/** A count of at least one (failures, mails, requests). */
const count = (fallback: number) => z.coerce.number().int().min(1).default(fallback);
const seconds = (fallback: number) => z.coerce.number().int().positive().default(fallback).meta({ unit: 'seconds' });

export const configSchema = z
  .strictObject({
    port: z.coerce.number().int().min(0).max(65535).default(8080).meta({ env: 'PORT', description: 'The port to listen on.' }),
    host: z.string().min(1).default('0.0.0.0').meta({ env: 'HOST', description: 'The address to listen on.' }),
    publicUrl: z.url().optional().meta({
      env: 'PUBLIC_URL',
      defaultText: '`http://localhost:$PORT`',
      description:
        'The issuer and the base of every URL Latchkey writes (discovery, redirects, mails): the address users and applications reach it at.',
    }),
    databaseUrl: z
      .string()
      .regex(/^(postgres(ql)?:\/\/|sqlite:)/, 'must start with postgres:// or sqlite:')
      .default('sqlite:./data/latchkey.db')
      .meta({ env: 'DATABASE_URL', description: '`postgres://user:password@host:5432/db` or `sqlite:PATH`.' }),
    workers: z
      .union([z.literal('auto'), z.coerce.number().int().min(1).max(64)])
      .default(1)
      .meta({
        env: 'WORKERS',
        description:
          'Worker processes on one port (`node:cluster`); `auto` is one per core, `1` no cluster at all ([Operating Latchkey](operating-latchkey.md#cluster-mode)).',
      }),
    secret: z.string().min(32, 'must be at least 32 characters').optional().meta({
      env: 'LATCHKEY_SECRET',
      defaultText: 'a built-in development value, with a warning',
      description:
        'The master secret, the same on every process of a deployment. Keys derived from it encrypt the signing keys, TOTP secrets and `CLIENT_SECRET_JWT` secrets at rest, and key the CSRF tokens, device cookies and SAML pairwise NameIDs: keep it with the backups ([Upgrades and backups](operating-latchkey.md#upgrades-and-backups)).',
    }),
    logLevel: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .meta({ env: 'LOG_LEVEL', description: 'The level of the JSON log (pino) on standard output.' }),
    trustProxy: z.string().optional().meta({
      env: 'TRUST_PROXY',
      description:
        "Express's `trust proxy`: the number of proxies in front (`1`) or their addresses (`10.0.0.0/8`, `loopback`); only then are `X-Forwarded-*` believed. Avoid `true` (every hop): any client could then choose its address with `X-Forwarded-For` and escape the per-address brute-force block; it is logged as a warning at start.",
    }),
    admin: z
      .strictObject({
        username: z
          .string()
          .min(1)
          .default('admin')
          .meta({ env: 'LATCHKEY_ADMIN_USERNAME', description: 'The admin user created at the first start, when no admin exists.' }),
        password: z.string().min(1).optional().meta({
          env: 'LATCHKEY_ADMIN_PASSWORD',
          defaultText: 'generated, printed once',
          description: "That user's password. Left unset, a password is generated and printed once to the console (never to the log).",
        }),
      })
      .prefault({}),
    tokens: z
      .strictObject({
        codeTtl: seconds(60).meta({ description: 'How long an authorization code may be exchanged.' }),
        accessTokenTtl: seconds(3600).meta({ description: "An access token's lifetime, for clients that set none of their own." }),
        refreshTokenTtl: seconds(30 * 24 * 3600).meta({
          description: "A refresh token's lifetime, for clients that set none of their own.",
        }),
        idTokenTtl: seconds(3600).meta({ description: "An id_token's lifetime." }),
        deviceCodeTtl: seconds(600).meta({
          description: 'How long a device authorization request waits for its user (RFC 8628 `expires_in`).',
        }),
      })
      .prefault({}),
    keys: z
      .strictObject({
        rotateEvery: seconds(90 * 24 * 3600).meta({ description: "Each algorithm's signing key is replaced when it is older than this." }),
        publishDelay: z.coerce.number().int().min(0).default(600).meta({
          unit: 'seconds',
          description: 'A new key is published this long before it signs; keep it longer than the JWKS cache (300 s).',
        }),
        reloadInterval: seconds(60).meta({
          description: 'How often each process re-reads the keys, and checks whether a rotation is due.',
        }),
      })
      .prefault({}),
    session: z
      .strictObject({
        ttl: seconds(8 * 3600).meta({ description: 'How long a single sign-on session lasts.' }),
      })
      .prefault({}),
    logout: z
      .strictObject({
        backchannelRetryDelays: z.array(z.coerce.number().int().min(0)).max(20).default([5000, 30000, 120000, 600000]).meta({
          unit: 'milliseconds',
          description:
            'Back-channel logout and SAML logout by SOAP: the waits before each new try after a failed delivery; when they run out the notice is given up ([Single logout](connect-an-application.md#single-logout), [Single logout by SOAP](saml-applications.md#single-logout-by-soap)).',
        }),
        backchannelPollInterval: z.coerce
          .number()
          .int()
          .min(10)
          .default(5000)
          .meta({ unit: 'milliseconds', description: 'How often each process looks for notices due, besides the ones it queues itself.' }),
        backchannelClaimLease: z.coerce.number().int().min(6000, 'must be at least 6000 (a delivery may take 5 s)').default(30_000).meta({
          unit: 'milliseconds',
          description:
            'How long a process holds a notice it is delivering; a notice held by a process that died goes to another once this runs out. Longer than a delivery (5 s), so that no live delivery is taken over and sent twice.',
        }),
      })
      .prefault({}),
    throttle: z
      .strictObject({
        userFreeFailures: count(5).meta({
          description: "Failures of one account's lane within `userWindow` before delays start ([Security](security.md)).",
        }),
        userBaseDelay: seconds(1).meta({ description: 'The first delay; it doubles with each further failure.' }),
        userMaxDelay: seconds(900).meta({ description: 'The longest delay.' }),
        userWindow: seconds(900).meta({
          description: "A user's failures older than this stop counting (the window starts at the first failure).",
        }),
        addressMaxFailures: count(100).meta({
          description: 'Failures from one address within `addressWindow` that block it for `addressBlock` (IPv6 counted per /64).',
        }),
        addressWindow: seconds(600).meta({ description: "The window of an address's failures." }),
        addressBlock: seconds(600).meta({ description: 'How long a blocked address is refused (429 with `Retry-After`).' }),
        upstreamMaxStarts: count(300).meta({
          description:
            'Sign-ins at upstream identity providers started from one address within `addressWindow`, after which it is refused them for `addressBlock` (each start stores a round trip).',
        }),
        passkeyMaxOptions: count(300).meta({
          description:
            'WebAuthn options (`POST /passkey/options`, each a stored challenge) one address may ask for within `addressWindow`, after which it is refused them (429) for `addressBlock`.',
        }),
        accountMaxFailures: count(100).meta({
          description:
            'Failures of one account within `userWindow` from browsers without a device cookie and public clients together, after which those are refused until the window ends.',
        }),
        slotWait: seconds(5).meta({
          description: 'How long an attempt waits for a slot that attempts in flight hold before it is refused.',
        }),
        codeMaxFailures: count(10).meta({
          description: 'Wrong second-factor codes of one account within `codeWindow`, after which TOTP codes are refused.',
        }),
        codeWindow: seconds(86400).meta({ description: "The window of an account's wrong second-factor codes." }),
      })
      .prefault({}),
    mfa: z
      .strictObject({
        required: flag.default(false).meta({
          description:
            'Every user needs a second factor; one without is taken through enrolment right after the password ([Multi-factor sign-in](multi-factor-sign-in.md)).',
        }),
      })
      .prefault({}),
    access: z
      .strictObject({
        contact: z.string().trim().min(1).max(300).optional().meta({
          description:
            'Whom to ask, shown on the page of a user an application\'s access policy refuses, after "Ask your administrator to give you access" (e.g. `the IT help desk, help@example.com`); unset, nothing more ([Access and claims](access-and-claims.md)).',
        }),
      })
      .prefault({}),
    audit: z
      .strictObject({
        everyToken: flag.default(false).meta({
          description:
            'Keep one `token.issued` event per `client_credentials` token instead of one per client and minute with the count ([Audit volume](#audit-volume)). Other events are always kept one by one.',
        }),
        sinkMaxBacklog: seconds(604_800).meta({
          description:
            'The furthest an event sink (the syslog sink, a webhook) may fall behind: its events recorded longer ago than this are skipped undelivered, audited once per stretch (`event_sink.skipped`) and logged as an error, so retention can purge them ([Send the audit log to a SIEM](audit-to-siem.md#delivery)). A webhook gives an event up sooner, after `webhooks.retryWindow`.',
        }),
        syslog: z
          .strictObject({
            url: z
              .string()
              .regex(/^(tcp|tls):\/\/(\[[0-9a-f:.]+\]|[^/:[\]\s]+)(:\d{1,5})?\/?$/i, 'must be tcp://host[:port] or tls://host[:port]')
              .meta({
                description:
                  "The SIEM's syslog receiver: `tcp://host[:port]` (port 514 when left out) or `tls://host[:port]` (RFC 5425, port 6514 when left out).",
              }),
            format: z.enum(['rfc5424', 'cef']).default('rfc5424').meta({
              description:
                "`rfc5424`: the event's fields as structured data; `cef`: an ArcSight CEF line ([Send the audit log to a SIEM](audit-to-siem.md)).",
            }),
            facility: z
              .union([
                z.enum(Object.keys(SYSLOG_FACILITIES) as [SyslogFacility, ...SyslogFacility[]]),
                z.coerce.number().int().min(0).max(23),
              ])
              .default('authpriv')
              .meta({
                typeText: 'facility name or integer 0–23',
                description: 'The syslog facility of every message: a name such as `authpriv`, `auth` or `local0`…`local7`, or its number.',
              }),
            enterpriseId: z.coerce.number().int().min(1).default(32473).meta({
              description:
                "The private enterprise number in the structured data's id (`latchkey@<n>`); the default is the one RFC 5612 sets aside for examples.",
            }),
            confirmAfter: seconds(5).meta({
              description:
                'An event sent counts as delivered once its connection has stayed open this long; a connection lost sooner sends it again ([Delivery](audit-to-siem.md#delivery)).',
            }),
            tls: z
              .strictObject({
                ca: pemOrFile.optional().meta({
                  defaultText: 'system CAs',
                  description:
                    "With `tls://`: the CA bundle that signed the receiver's certificate: PEM text or a file path, read once at start.",
                }),
                cert: pemOrFile.optional().meta({
                  description:
                    'A client certificate (PEM text or a file path), for a receiver that asks for one (mutual TLS, as RFC 5425 advises).',
                }),
                key: pemOrFile
                  .optional()
                  .meta({ description: "The client certificate's private key: a file path keeps it out of the config." }),
                rejectUnauthorized: flag.default(true).meta({
                  description: '`false` sends to a receiver whose certificate is not checked: only for a lab, never across a network.',
                }),
              })
              .prefault({}),
          })
          .superRefine((s, issues) => {
            if (!s.tls.cert !== !s.tls.key)
              issues.addIssue({ code: 'custom', path: ['tls', s.tls.cert ? 'key' : 'cert'], message: 'tls.cert and tls.key go together' });
          })
          .optional()
          .meta({
            description:
              'Sends every audit event to a SIEM over syslog, from the same durable queue as webhooks; unset, nothing is sent ([Send the audit log to a SIEM](audit-to-siem.md)).',
          }),
      })
      .prefault({}),
    metrics: z
      .strictObject({
        token: z.string().min(16, 'must be at least 16 characters').optional().meta({
          env: 'METRICS_TOKEN',
          description: 'When set, `/metrics` needs `Authorization: Bearer <token>`; unset, it answers anyone.',
        }),
      })
      .prefault({}),
    retention: z
      .strictObject({
        interval: seconds(300).meta({ description: 'Time between purges of expired rows ([Retention](operating-latchkey.md#retention)).' }),
        auditDays: z.coerce
          .number()
          .int()
          .min(0)
          .default(90)
          .meta({ unit: 'days', description: 'Audit events older than this are purged; `0` keeps them forever.' }),
        batchSize: z.coerce
          .number()
          .int()
          .min(1)
          .max(100_000)
          .default(1000)
          .meta({ description: 'The most rows one purge statement deletes (batches are sized by time, up to this).' }),
      })
      .prefault({}),
    outbound: z
      .strictObject({
        denyNetworks: z
          .array(
            z.string().refine((n) => parseNetwork(n) !== undefined, 'must be a network such as 10.0.0.0/8 or fd00::/8, or one IP address'),
          )
          .default([])
          .meta({
            description:
              'Networks (CIDRs such as `10.20.0.0/16` or `fd00::/8`, or single addresses) Latchkey never calls: client `jwksUri` and `backchannelLogoutUri`, upstream providers. Refused at registration for an address in the URL, and at connect time for a host name resolving into one. Link-local and unspecified addresses are always refused; private and loopback ones are allowed unless listed here ([Security](security.md), "Outbound calls").',
          }),
      })
      .prefault({}),
    webhooks: z
      .strictObject({
        retryDelays: z
          .array(z.coerce.number().int().min(0))
          .min(1)
          .max(30)
          .default([5000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000])
          .meta({
            unit: 'milliseconds',
            description:
              'The waits before each new try of an event an endpoint failed; the last one repeats until `retryWindow` ends ([Webhooks](webhooks.md), "Retries and order").',
          }),
        retryWindow: seconds(86_400).meta({
          description:
            'How long after it was recorded an event is tried; then it is given up (`webhook.given_up`) and the endpoint gets the next one. An event whose window ends before its turn (an endpoint failing, or too slow for the events) is given up untried. At most `audit.sinkMaxBacklog`.',
        }),
        pollInterval: z.coerce
          .number()
          .int()
          .min(10)
          .default(1000)
          .meta({ unit: 'milliseconds', description: 'How often each process looks for events to send to the webhooks.' }),
        claimLease: z.coerce.number().int().min(15_000, 'must be at least 15000 (a delivery may take 10 s)').default(60_000).meta({
          unit: 'milliseconds',
          description:
            'How long a process holds an endpoint it is sending to; one held by a process that died goes to another once this runs out. Longer than a delivery (10 s), so that no live delivery is taken over.',
        }),
      })
      .prefault({}),
    identity: z
      .strictObject({
        backends: z
          .array(backendEntry)
          .min(1)
          .default([{ id: 'local', plugin: 'database', config: {} }])
          .meta({
            defaultText: 'the database backend alone (`id: local`)',
            description: 'The identity backends, tried in order for every password check ([Identity backends](identity-backends.md)).',
          }),
        upstreams: z.array(upstreamEntry).default([]).meta({
          description:
            'Other OpenID Connect providers, each a "Sign in with <name>" on the login page ([Upstream identity providers](upstream-identity-providers.md)).',
        }),
      })
      .prefault({})
      .superRefine((identity, issues) => {
        // An upstream's users are recorded with `backend` = its id: one id may not name two sources.
        const seen = new Set<string>();
        identity.upstreams.forEach((u, i) => {
          const clash = seen.has(u.id)
            ? 'another upstream'
            : identity.backends.some((b) => b.id === u.id)
              ? 'an identity backend'
              : undefined;
          if (clash) issues.addIssue({ code: 'custom', path: ['upstreams', i, 'id'], message: `"${u.id}" is already the id of ${clash}` });
          seen.add(u.id);
        });
      }),
    passwordReset: z
      .strictObject({
        enabled: flag.default(false).meta({
          env: 'PASSWORD_RESET_ENABLED',
          description:
            '"Forgot your password?" on the login page, with a link sent by mail; needs `smtp.url` and `smtp.from` ([Password reset by mail](password-reset-by-mail.md)).',
        }),
        accountLimit: count(3).meta({
          description: 'Reset mails one account may be sent within `window`; requests past it get the same answer and no mail.',
        }),
        addressLimit: count(10).meta({ description: 'Reset requests one address may make within `window`, whatever the accounts.' }),
        window: seconds(3600).meta({ description: 'The window of both limits.' }),
      })
      .prefault({}),
    smtp: z
      .strictObject({
        url: z
          .string()
          .regex(/^smtps?:\/\/[^/]/, 'must be an smtp:// or smtps:// URL')
          .optional()
          .meta({
            env: 'SMTP_URL',
            description:
              'The mail server: `smtp://[user:password@]host[:port]` (STARTTLS when the server offers it) or `smtps://…` (TLS from the start). The password in it is never logged.',
          }),
        from: z
          .string()
          .min(3)
          .optional()
          .meta({ env: 'SMTP_FROM', description: "The From of Latchkey's mails, e.g. `Latchkey <sso@example.com>`." }),
      })
      .prefault({}),
  })
  .superRefine((c, issues) => {
    // Checked at start: a reset link that can never be mailed is a configuration error, not a runtime one.
    if (!c.passwordReset.enabled) return;
    for (const key of ['url', 'from'] as const) {
      if (!c.smtp[key]) issues.addIssue({ code: 'custom', path: ['smtp', key], message: 'is required when passwordReset.enabled is true' });
    }
  });

export type Config = z.infer<typeof configSchema> & { publicUrl: string };
export type BackendEntry = z.infer<typeof backendEntry>;
export type UpstreamEntry = z.infer<typeof upstreamEntry>;
