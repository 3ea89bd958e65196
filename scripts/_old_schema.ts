import { z } from 'zod';
import { parseNetwork } from '../src/outbound/address-rules.ts';

/**
 * The id of an identity backend or an upstream: stored as users' `backend`, and part of an upstream
 * user's username (`name@<id>`), so it is kept short and plain.
 */
export const sourceId = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/i, 'must be letters, digits, "-" or "_"');

/** One identity backend in the chain: which plugin, and the plugin's own config (validated by the plugin). */
const backendEntry = z.strictObject({
  id: sourceId,
  plugin: z.string().min(1),
  config: z.record(z.string(), z.unknown()).default({}),
});

/** A boolean that an environment variable can set as `true` / `false`. */
const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
/**
 * One upstream identity provider (docs/upstream-identity-providers.md): its id, its label and its kind here; everything else is the
 * kind's own config, validated by the upstream plugin when the server starts (src/identity/upstreams/).
 */
const upstreamEntry = z
  .strictObject({
    id: sourceId,
    name: z.string().min(1),
    /** The upstream plugin. @default "oidc" */
    kind: z.string().min(1).default('oidc'),
  })
  .loose();

const seconds = (fallback: number) => z.coerce.number().int().positive().default(fallback);

export const configSchema = z.strictObject({
  /** @default 8080 */
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  /** @default "0.0.0.0" */
  host: z.string().min(1).default('0.0.0.0'),
  /** Issuer and base URL; @default http://localhost:$PORT */
  publicUrl: z.url().optional(),
  /** `postgres://…` or `sqlite:PATH`; @default sqlite:./data/latchkey.db */
  databaseUrl: z
    .string()
    .regex(/^(postgres(ql)?:\/\/|sqlite:)/, 'must start with postgres:// or sqlite:')
    .default('sqlite:./data/latchkey.db'),
  /**
   * Worker processes on one port (node:cluster): a number, or `auto` for one per core. @default 1
   * (no cluster: the server runs in the one process).
   */
  workers: z
    .union([z.literal('auto'), z.coerce.number().int().min(1).max(64)])
    .default(1),
  /**
   * Master secret: encrypts signing keys at rest and keys the CSRF tokens. Every process of one
   * deployment needs the same value. @default a built-in development value (a warning is logged)
   */
  secret: z.string().min(32, 'must be at least 32 characters').optional(),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  trustProxy: z.string().optional(),
  admin: z
    .strictObject({
      username: z.string().min(1).default('admin'),
      password: z.string().min(1).optional(),
    })
    .prefault({}),
  tokens: z
    .strictObject({
      /** Authorization code lifetime. @default 60 */
      codeTtl: seconds(60),
      /** Default access token lifetime when the client sets none. @default 3600 */
      accessTokenTtl: seconds(3600),
      /** Default refresh token lifetime when the client sets none. @default 2592000 (30 days) */
      refreshTokenTtl: seconds(30 * 24 * 3600),
      /** Default id_token lifetime. @default 3600 */
      idTokenTtl: seconds(3600),
      /** Device authorization request lifetime (RFC 8628 `expires_in`). @default 600 */
      deviceCodeTtl: seconds(600),
    })
    .prefault({}),
  keys: z
    .strictObject({
      /** Each algorithm's signing key is replaced when older than this. @default 7776000 (90 days) */
      rotateEvery: seconds(90 * 24 * 3600),
      /** A new key is published this long before it signs (longer than the JWKS cache, 300 s). @default 600 */
      publishDelay: z.coerce.number().int().min(0).default(600),
      /** How often each process re-reads the keys (and checks whether a rotation is due). @default 60 */
      reloadInterval: seconds(60),
    })
    .prefault({}),
  session: z
    .strictObject({
      /** SSO session lifetime. @default 28800 (8 hours) */
      ttl: seconds(8 * 3600),
    })
    .prefault({}),
  logout: z
    .strictObject({
      /**
       * Back-channel logout: the waits (milliseconds) before each new try after a failed delivery;
       * when they run out the notice is given up. @default [5000, 30000, 120000, 600000]
       */
      backchannelRetryDelays: z.array(z.coerce.number().int().min(0)).max(20).default([5000, 30000, 120000, 600000]),
      /** How often (milliseconds) each process looks for notices due, besides the ones it queues itself. @default 5000 */
      backchannelPollInterval: z.coerce.number().int().min(10).default(5000),
      /**
       * How long (milliseconds) a process holds a notice it is delivering; a notice held by a process
       * that died goes to another once this runs out. Longer than a delivery (5 s), so that no live
       * delivery is taken over and sent twice. @default 30000
       */
      backchannelClaimLease: z.coerce.number().int().min(6000, 'must be at least 6000 (a delivery may take 5 s)').default(30_000),
    })
    .prefault({}),
  throttle: z
    .strictObject({
      /** Consecutive failures for one user before delays start. @default 5 */
      userFreeFailures: z.coerce.number().int().min(1).default(5),
      /** First delay; doubles with each further failure. @default 1 */
      userBaseDelay: seconds(1),
      /** @default 900 (15 minutes) */
      userMaxDelay: seconds(900),
      /** A user's failures older than this stop counting (the window starts at the first failure). @default 900 */
      userWindow: seconds(900),
      /** Failures from one address within the window that block it. @default 100 */
      addressMaxFailures: z.coerce.number().int().min(1).default(100),
      /** @default 600 */
      addressWindow: seconds(600),
      /** @default 600 */
      addressBlock: seconds(600),
      /**
       * Sign-ins at upstream identity providers started from one address within `addressWindow`,
       * after which it is refused them for `addressBlock` (each start stores a round trip). @default 300
       */
      upstreamMaxStarts: z.coerce.number().int().min(1).default(300),
      /**
       * WebAuthn options (`POST /passkey/options`, each one a stored challenge) one address may ask for
       * within `addressWindow`, after which it is refused them (429) for `addressBlock`. @default 300
       */
      passkeyMaxOptions: z.coerce.number().int().min(1).default(300),
      /**
       * Failures of one account within `userWindow`, from browsers without a device cookie and public
       * clients together, after which those are refused until the window ends. @default 100
       */
      accountMaxFailures: z.coerce.number().int().min(1).default(100),
      /** How long an attempt waits for a slot that attempts in flight hold before it is refused. @default 5 */
      slotWait: seconds(5),
      /** Wrong second-factor codes of one account within `codeWindow` after which TOTP codes are refused. @default 10 */
      codeMaxFailures: z.coerce.number().int().min(1).default(10),
      /** @default 86400 (24 hours) */
      codeWindow: seconds(86400),
    })
    .prefault({}),
  mfa: z
    .strictObject({
      /** Every user needs a second factor; one without is taken through TOTP enrolment at sign-in. @default false */
      required: z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]).default(false),
    })
    .prefault({}),
  audit: z
    .strictObject({
      /**
       * Keep one `token.issued` event per client_credentials token instead of one per client and
       * minute with the count (docs/decisions.md "Audit volume"). Other events are always kept one by one. @default false
       */
      everyToken: z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]).default(false),
    })
    .prefault({}),
  metrics: z
    .strictObject({
      /** When set, `/metrics` needs `Authorization: Bearer <token>`. */
      token: z.string().min(16, 'must be at least 16 characters').optional(),
    })
    .prefault({}),
  retention: z
    .strictObject({
      /** Seconds between purges of expired rows. @default 300 */
      interval: seconds(300),
      /** Audit events older than this many days are purged; 0 keeps them forever. @default 90 */
      auditDays: z.coerce.number().int().min(0).default(90),
      /** The most rows one purge statement deletes (batches are sized by time, up to this). @default 1000 */
      batchSize: z.coerce.number().int().min(1).max(100_000).default(1000),
    })
    .prefault({}),
  outbound: z
    .strictObject({
      /**
       * Networks (CIDRs such as `10.20.0.0/16` or `fd00::/8`, or single addresses) Latchkey never calls:
       * client `jwksUri` and `backchannelLogoutUri`, upstream providers. Refused at registration for
       * an address in the URL, and at connect time for a host name resolving into one. Link-local
       * (169.254.0.0/16, fe80::/10: cloud metadata services) and unspecified (0.0.0.0/8, `::`)
       * addresses are always refused; private and loopback ones are allowed unless listed here
       * (docs/decisions.md "Outbound fetches"). @default []
       */
      denyNetworks: z
        .array(z.string().refine((n) => parseNetwork(n) !== undefined, 'must be a network such as 10.0.0.0/8 or fd00::/8, or one IP address'))
        .default([]),
    })
    .prefault({}),
  identity: z
    .strictObject({
      backends: z.array(backendEntry).min(1).default([{ id: 'local', plugin: 'database', config: {} }]),
      /** Upstream identity providers (docs/upstream-identity-providers.md): "Sign in with <name>" on the login page. @default [] */
      upstreams: z.array(upstreamEntry).default([]),
    })
    .prefault({})
    .superRefine((identity, issues) => {
      // An upstream's users are recorded with `backend` = its id: one id may not name two sources.
      const seen = new Set<string>();
      identity.upstreams.forEach((u, i) => {
        const clash = seen.has(u.id) ? 'another upstream' : identity.backends.some((b) => b.id === u.id) ? 'an identity backend' : undefined;
        if (clash) issues.addIssue({ code: 'custom', path: ['upstreams', i, 'id'], message: `"${u.id}" is already the id of ${clash}` });
        seen.add(u.id);
      });
    }),
  passwordReset: z
    .strictObject({
      /** "Forgot your password?" on the login page, with a link sent by mail (docs/identity-backends.md); needs `smtp.url` and `smtp.from`. @default false */
      enabled: flag.default(false),
      /** Reset mails one account may be sent within `window`; requests past it get the same answer and no mail. @default 3 */
      accountLimit: z.coerce.number().int().min(1).default(3),
      /** Reset requests one address may make within `window`, whatever the accounts. @default 10 */
      addressLimit: z.coerce.number().int().min(1).default(10),
      /** @default 3600 (an hour) */
      window: seconds(3600),
    })
    .prefault({}),
  smtp: z
    .strictObject({
      /**
       * Where reset mails go: `smtp://[user:password@]host[:port]` (STARTTLS when the server offers it)
       * or `smtps://…` (TLS from the start). The password in it is never logged.
       */
      url: z.string().regex(/^smtps?:\/\/[^/]/, 'must be an smtp:// or smtps:// URL').optional(),
      /** The From address of Latchkey's mails, e.g. `Latchkey <sso@example.com>`. */
      from: z.string().min(3).optional(),
    })
    .prefault({}),
}).superRefine((c, issues) => {
  // Checked at start: a reset link that can never be mailed is a configuration error, not a runtime one.
  if (!c.passwordReset.enabled) return;
  for (const key of ['url', 'from'] as const) {
    if (!c.smtp[key]) issues.addIssue({ code: 'custom', path: ['smtp', key], message: 'is required when passwordReset.enabled is true' });
  }
});

export type Config = z.infer<typeof configSchema> & { publicUrl: string };
export type BackendEntry = z.infer<typeof backendEntry>;
export type UpstreamEntry = z.infer<typeof upstreamEntry>;
