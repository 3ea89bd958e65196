import * as oidc from 'openid-client';
import { Strategy as OidcStrategy, type AuthenticateOptions } from 'openid-client/passport';
import type { Strategy } from 'passport';
import { z } from 'zod';
import { addressRules } from '../../outbound/address-rules.ts';
import { asFetch } from '../../outbound/as-fetch.ts';
import { findOutboundError } from '../../outbound/outbound-error.ts';
import { urlRefusal } from '../../outbound/url-check.ts';
import {
  defineUpstreamPlugin,
  UpstreamUnavailableError,
  type UpstreamFault,
  type UpstreamIdentity,
  type UpstreamState,
} from './contract.ts';
import { upstreamBase } from './policy.ts';

const claimName = z.string().min(1);

/** Metadata and key sets are small documents (docs/decisions.md caps them at 64 KiB); token and userinfo answers may carry many groups. */
const SMALL_ANSWER = 64 * 1024;
const LARGE_ANSWER = 1024 * 1024;

/** Link-local and unspecified addresses are refused for every upstream, whatever the config's denyNetworks. */
const alwaysRefused = addressRules();

/** An OpenID Connect provider (Entra ID, Google Workspace, Okta, another Latchkey, …). */
export const oidcUpstreamConfig = upstreamBase
  .extend({
    kind: z.literal('oidc').default('oidc'),
    /**
     * The issuer; its `/.well-known/openid-configuration` is read on first use. A link-local or
     * unspecified address (169.254.169.254, 0.0.0.0) is refused here; `outbound.denyNetworks` at connect time.
     */
    issuer: z.url().superRefine((issuer, issues) => {
      // zod runs this after z.url() refused the value too: only a URL has an address to check.
      const why = URL.canParse(issuer) ? urlRefusal(new URL(issuer), alwaysRefused) : undefined;
      if (why) issues.addIssue({ code: 'custom', message: why });
    }),
    clientId: z.string().min(1),
    clientSecret: z.string().min(1),
    /** @default ["openid", "profile", "email"] */
    scopes: z
      .array(z.string().min(1))
      .default(['openid', 'profile', 'email'])
      .refine((s) => s.includes('openid'), 'must include "openid"'),
    /** The claims to read each attribute from (the id_token's, then the userinfo endpoint's). */
    claims: z
      .object({
        /** @default "preferred_username" (then the email, then `sub`) */
        username: claimName.default('preferred_username'),
        /** @default "email" */
        email: claimName.default('email'),
        /** @default "name" */
        name: claimName.default('name'),
        /** @default "groups" */
        groups: claimName.default('groups'),
      })
      .strict()
      .prefault({}),
    /**
     * More claims kept on the user's record at each sign-in (`department`, `employee_id`, …), read like
     * the others (the id_token's, then userinfo's), for claim and attribute mappings
     * (docs/access-and-claims.md): a string as it is, a number or boolean as text, a list of them as a
     * list; a claim the upstream does not send, or sends as an object, is left out. At most 64. @default []
     */
    extraClaims: z.array(claimName).max(64).default([]),
    /**
     * Take the email when the upstream sends no `email_verified` at all (Microsoft Entra ID never
     * does): only for an upstream that sends only addresses it owns. An email marked unverified is
     * never taken. @default false
     */
    trustEmail: z.boolean().default(false),
    /** Every call to the upstream (metadata, keys, token, userinfo) gives up after this. @default 10000 */
    timeoutMs: z.coerce.number().int().min(100).max(120_000).default(10_000),
  })
  .strict();

export type OidcUpstreamConfig = z.infer<typeof oidcUpstreamConfig>;

/**
 * openid-client's passport strategy, sending `state` and `nonce` on every request (it sends them only
 * when PKCE or an implicit response type leaves it no choice) and the client's `max_age`, so the
 * callback checks all three: the state and nonce against what this browser was given, `auth_time`
 * against `max_age`.
 */
class StateAndNonceStrategy extends OidcStrategy {
  override authorizationRequestParams<T extends AuthenticateOptions>(
    req: Parameters<OidcStrategy['authorizationRequestParams']>[0],
    options: T,
  ): URLSearchParams {
    const params = new URLSearchParams(super.authorizationRequestParams(req, options));
    params.set('state', oidc.randomState());
    params.set('nonce', oidc.randomNonce());
    const maxAge = (options as { maxAge?: number }).maxAge;
    if (maxAge !== undefined) params.set('max_age', String(maxAge));
    return params;
  }

  /**
   * Which leg this is, as the sign-in step says (`initiate`), not guessed from the request: the first
   * leg is the login page's posted form, and a callback without a code must be refused, not restarted.
   */
  override shouldInitiateAuthRequest<T extends AuthenticateOptions>(_req: unknown, _url: URL, options: T): boolean {
    return (options as { initiate?: boolean }).initiate === true;
  }
}

/** The error codes of RFC 6749 4.1.2.1 and 5.2 and OIDC Core 3.1.2.6: the words of ours an upstream's error is said in. */
const ERROR_CODES = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'access_denied',
  'unsupported_response_type',
  'server_error',
  'temporarily_unavailable',
  'interaction_required',
  'login_required',
  'account_selection_required',
  'consent_required',
  'invalid_request_uri',
  'invalid_request_object',
  'request_not_supported',
  'request_uri_not_supported',
  'registration_not_supported',
]);
/** A known code as itself; anything else an upstream wrote there is not repeated (docs/decisions.md: no echo). */
const errorCode = (code: unknown): string => (typeof code === 'string' && ERROR_CODES.has(code) ? code : 'an unknown error code');

/** Faults that mean "cannot reach the upstream" (503), by openid-client's codes; anything else is a bad answer (400). */
const unreachable: Record<string, string> = {
  OAUTH_TIMEOUT: 'the upstream did not answer in time',
  OAUTH_ABORT: 'the upstream did not answer in time',
  OAUTH_RESPONSE_IS_NOT_JSON: 'the upstream answered something that is not JSON',
  OAUTH_RESPONSE_IS_NOT_CONFORM: 'the upstream answered with an unexpected HTTP status',
};

/** fetch itself failed (refused, reset, no such host), possibly wrapped by openid-client. */
function fetchFailed(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof TypeError || /^E(CONNREFUSED|CONNRESET|NOTFOUND|HOSTUNREACH|AI_AGAIN)$/.test(String((e as { code?: unknown }).code)))
      return true;
  }
  return false;
}

function explain(err: unknown): UpstreamFault {
  if (err instanceof UpstreamUnavailableError) return { unavailable: true, reason: err.reason };
  if (err instanceof oidc.AuthorizationResponseError)
    return { unavailable: false, reason: `the upstream answered ${errorCode(err.error)}` };
  if (err instanceof oidc.ResponseBodyError)
    return { unavailable: false, reason: `the upstream refused the code: ${errorCode(err.error)}` };
  // Our own outbound rules and limits, in their fixed words (docs/decisions.md): never what the upstream sent.
  const outbound = findOutboundError(err);
  if (outbound) {
    if (outbound.failure === 'timeout') return { unavailable: true, reason: 'the upstream did not answer in time' };
    return {
      unavailable: true,
      reason: outbound.failure === 'refused' ? 'the upstream is at a refused address' : `the upstream cannot be used: ${outbound.reason}`,
    };
  }
  const code = (err as { code?: string }).code ?? '';
  if (unreachable[code]) return { unavailable: true, reason: unreachable[code] };
  if (fetchFailed(err)) return { unavailable: true, reason: 'the upstream cannot be reached' };
  // A body that is not the JSON it claims to be: the parser's message quotes the body (docs/decisions.md: never echo it).
  if (code === 'OAUTH_PARSE_ERROR' || err instanceof SyntaxError || (err as { cause?: unknown }).cause instanceof SyntaxError) {
    return { unavailable: false, reason: 'the upstream answered with a body that is not valid JSON' };
  }
  // openid-client wraps the check that failed; its words name the claim or the signature, never a token.
  const inner = (err as { cause?: unknown }).cause;
  const words = inner instanceof Error ? inner.message : err instanceof Error ? err.message : String(err);
  return { unavailable: false, reason: `the upstream's answer failed a check: ${words}` };
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() ? v.trim() : undefined);

/** A claim holding groups: a list of names, or one name. */
const groupsOf = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((g): g is string => typeof g === 'string') : text(v) ? [text(v)!] : [];

/** A claim as an attribute value: text, a number or boolean as text, or a list of them; undefined for anything else. */
function attributeOf(v: unknown): string | string[] | undefined {
  const scalar = (x: unknown) => (['string', 'number', 'boolean'].includes(typeof x) ? String(x) : undefined);
  if (!Array.isArray(v)) return scalar(v);
  const list = v.map(scalar).filter((x): x is string => x !== undefined);
  return list.length > 0 ? list : undefined;
}

/** The `extraClaims` the upstream sent, under their claim names (docs/access-and-claims.md). */
function extraClaimsOf(names: readonly string[], claims: Record<string, unknown>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name of names) {
    const value = Object.hasOwn(claims, name) ? attributeOf(claims[name]) : undefined;
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** The user, from the id_token's claims over the userinfo endpoint's (the id_token wins). */
function identityOf(c: OidcUpstreamConfig, claims: Record<string, unknown>): UpstreamIdentity {
  const subject = text(claims.sub)!;
  // Only an email the upstream says it verified is taken: any other would pass `allowedDomains`, and
  // reach SAML apps as someone's address. `trustEmail` stands in for the claim an upstream never sends.
  const verified = claims.email_verified === true || (c.trustEmail && claims.email_verified === undefined);
  const email = verified ? text(claims[c.claims.email]) : undefined;
  return {
    subject,
    username: text(claims[c.claims.username]) ?? email ?? subject,
    email: email ?? null,
    displayName: text(claims[c.claims.name]) ?? null,
    groups: groupsOf(claims[c.claims.groups]),
    amr: Array.isArray(claims.amr) ? claims.amr.filter((m): m is string => typeof m === 'string') : [],
    // Always reported: a claim the upstream stops sending, or taken out of extraClaims, leaves the record.
    attributes: extraClaimsOf(c.extraClaims, claims),
  };
}

/**
 * The OpenID Connect upstream: Latchkey as a relying party through openid-client (code flow, PKCE
 * S256, `state`, `nonce`, the id_token's signature checked with the upstream's JWKS and its `iss`,
 * `aud`, `exp` and `nonce`). The metadata is read on first use and again after a failure, so an
 * upstream down at start costs nothing but its own sign-ins.
 */
export default defineUpstreamPlugin({
  kind: 'oidc',
  configSchema: oidcUpstreamConfig,
  create(c, ctx) {
    let state: UpstreamState = 'unknown';
    let strategy: Promise<Strategy> | undefined;
    const insecure = new URL(c.issuer).protocol === 'http:';
    if (insecure && !/^(127\.|localhost$|\[::1\]$)/.test(new URL(c.issuer).hostname)) {
      ctx.logger.warn({ upstream: c.id, issuer: c.issuer }, 'upstream issuer is plain http: use https in production');
    }

    // Every call goes through the outbound rules (docs/decisions.md): no redirect followed, answers capped.
    const small = asFetch(ctx.outbound, { maxBytes: SMALL_ANSWER, timeoutMs: c.timeoutMs });
    const large = asFetch(ctx.outbound, { maxBytes: LARGE_ANSWER, timeoutMs: c.timeoutMs });

    async function discover(): Promise<Strategy> {
      let config: oidc.Configuration;
      try {
        config = await oidc.discovery(
          new URL(c.issuer),
          c.clientId,
          { redirect_uris: [ctx.callbackUrl] },
          oidc.ClientSecretPost(c.clientSecret),
          {
            timeout: c.timeoutMs / 1000,
            execute: [oidc.enableNonRepudiationChecks, ...(insecure ? [oidc.allowInsecureRequests] : [])],
            [oidc.customFetch]: small,
          },
        );
        const jwksUri = config.serverMetadata().jwks_uri;
        config[oidc.customFetch] = (url, options) => (url === jwksUri ? small : large)(url, options);
      } catch (err) {
        state = 'down';
        const fault = explain(err);
        throw new UpstreamUnavailableError(
          `upstream "${c.id}": cannot read its metadata: ${fault.reason}`,
          fault.unavailable ? fault.reason : `its metadata is not usable (${fault.reason})`,
        );
      }
      state = 'up';
      // openid-client types its `authenticate` with its own `this`; at run time it is a passport strategy.
      return new StateAndNonceStrategy(
        { config, name: c.id, sessionKey: c.id, callbackURL: ctx.callbackUrl, scope: c.scopes.join(' ') },
        (tokens, verified) => {
          void (async () => {
            const claims: Record<string, unknown> = { ...tokens.claims() };
            if (config.serverMetadata().userinfo_endpoint && tokens.access_token) {
              const info = await oidc.fetchUserInfo(config, tokens.access_token, String(claims.sub));
              for (const [k, v] of Object.entries(info)) if (!(k in claims)) claims[k] = v;
            }
            return identityOf(c, claims);
          })().then(
            (identity) => {
              // It answered the whole exchange: up again, whatever a failure said before.
              state = 'up';
              verified(null, identity);
            },
            (err: unknown) => verified(err),
          );
        },
      ) as unknown as Strategy;
    }

    return {
      id: c.id,
      name: c.name,
      kind: 'oidc',
      policy: {
        adminGroups: c.adminGroups,
        adminRoleGroups: c.adminRoleGroups,
        allowedDomains: c.allowedDomains,
        trustMfa: c.trustMfa,
        qualifyUsernames: c.qualifyUsernames,
      },
      sessionKey: c.id,
      state: () => state,
      strategy() {
        // One reading at a time; a failed one is forgotten, so the next sign-in tries again.
        strategy ??= discover();
        strategy.catch(() => (strategy = undefined));
        return strategy;
      },
      authenticateOptions: (ask) => ({
        session: false,
        initiate: true,
        ...(ask.prompt ? { prompt: ask.prompt } : {}),
        ...(ask.maxAge !== undefined ? { maxAge: ask.maxAge } : {}),
      }),
      explain(err) {
        const fault = explain(err);
        if (fault.unavailable) state = 'down';
        return fault;
      },
    };
  },
});
