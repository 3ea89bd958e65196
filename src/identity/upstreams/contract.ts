/**
 * The upstream identity provider contract (docs/upstream-identity-providers.md): what a kind of upstream implements. An upstream
 * signs the user in somewhere else and hands back who they are; Latchkey's own policy (throttling,
 * second factor, consent, the SSO session) runs afterwards, whatever the kind. An upstream is declared
 * like an identity backend: a typed factory with its zod config, so that a SAML or a plain OAuth 2.0
 * upstream is one more factory returning its own passport strategy.
 */
import type { Logger } from 'pino';
import type { Strategy } from 'passport';
import type { z } from 'zod';
import type { AddressRules } from '../../outbound/address-rules.ts';
import type { UpstreamPolicy } from './policy.ts';

/** Who the upstream says signed in, read from its answer with the upstream's claim names. */
export interface UpstreamIdentity {
  /** The upstream's stable subject (`sub`): with the upstream's id, the key of the local user. */
  subject: string;
  username: string;
  email?: string | null;
  displayName?: string | null;
  groups: string[];
  /** The upstream's authentication methods (RFC 8176 `amr`), as it reported them. */
  amr: string[];
  /**
   * The upstream's `extraClaims` (docs/access-and-claims.md), kept on the user's record; undefined when
   * none are configured, and the record keeps what it has.
   */
  attributes?: Record<string, string | string[]>;
}

/** What an upstream's sign-in keeps across the round trip: the strategy's state, under `sessionKey`. */
export type StrategyState = Record<string, unknown>;

/** Options of one sign-in passed on to the upstream: the client's `prompt=login` and `max_age`. */
export interface UpstreamAsk {
  prompt?: 'login';
  maxAge?: number;
}

/** `unknown` until the upstream was first reached; `down` after it could not be reached. */
export type UpstreamState = 'unknown' | 'up' | 'down';

/** Why an upstream's sign-in failed: `unavailable` (unreachable, timed out, not JSON) → 503, else 400. */
export interface UpstreamFault {
  unavailable: boolean;
  /** A short reason for the log, the audit event and the page; never a token or a secret. */
  reason: string;
}

export interface Upstream {
  readonly id: string;
  readonly name: string;
  readonly kind: string;
  /** What Latchkey decides about the upstream's users: admin groups, email domains, trusted `mfa`. */
  readonly policy: UpstreamPolicy;
  /** Where the strategy keeps its state between the redirect and the callback (`req.session[sessionKey]`). */
  readonly sessionKey: string;
  state(): UpstreamState;
  /**
   * The passport strategy of this upstream. Its `success` gives an `UpstreamIdentity`. Resolving it may
   * read the upstream's metadata (lazily, retried on the next call after a failure, bounded by a
   * timeout); throws `UpstreamUnavailableError` when the upstream cannot be reached.
   */
  strategy(): Promise<Strategy>;
  /** The options of the strategy's `authenticate` for the first leg (the redirect to the upstream). */
  authenticateOptions(ask: UpstreamAsk): Record<string, unknown>;
  /** What went wrong, from an error the strategy raised. */
  explain(err: unknown): UpstreamFault;
  close?(): void;
}

export interface UpstreamContext {
  logger: Logger;
  /** `PUBLIC_URL/login/upstream/<id>/callback`: the redirect URI registered at the upstream. */
  callbackUrl: string;
  /** Addresses never called (docs/decisions.md "Outbound fetches"): every call to the upstream obeys them. */
  outbound: AddressRules;
}

export interface UpstreamPlugin<S extends z.ZodType = z.ZodType> {
  kind: string;
  /** The whole `identity.upstreams[]` entry (id, name, kind and the kind's own keys). */
  configSchema: S;
  create(config: z.infer<S>, ctx: UpstreamContext): Upstream;
}

/** Declares an upstream plugin; `satisfies`-style typing of its config from the schema. */
export const defineUpstreamPlugin = <S extends z.ZodType>(plugin: UpstreamPlugin<S>): UpstreamPlugin<S> => plugin;

/** The upstream could not be reached (down, timed out, answered something that is not its metadata). */
export class UpstreamUnavailableError extends Error {
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
    this.name = 'UpstreamUnavailableError';
  }
}
