import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Actor, AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import { hashToken, randomToken } from '../crypto/tokens.ts';
import type { Transaction } from '../db/transaction.ts';
import { InputError } from '../errors/service.ts';
import type { ScimToken } from './model.ts';
import type { ScimTokenQueries } from './token-queries.ts';

/** What every SCIM secret starts with: a leaked one is recognisable (secret scanners, logs) for what it is. */
export const SCIM_TOKEN_PREFIX = 'lks_scim_';
/** The prefix and 256 random bits, base64url; anything else is refused without a lookup. */
const TOKEN_SHAPE = /^lks_scim_[A-Za-z0-9_-]{43}$/;
/** `lastUsedAt` is kept to the minute: at most one write per token and minute, whatever the traffic. */
const TOUCH_EVERY_MS = 60_000;
const DESCRIPTION_MAX = 200;

/** A SCIM request's token, checked: its id, and the one backend its requests may reach. */
export interface VerifiedScimToken {
  id: string;
  backend: string;
}

export interface CreatedScimToken {
  /** The secret: shown once, to be pasted into the SCIM client; only its hash is kept. */
  token: string;
  scimToken: ScimToken;
}

/** What a token's creation or revocation needs of a transaction: the row and its audit event commit together. */
interface TokenTransaction {
  queries: { scimTokens: ScimTokenQueries };
  audit: Pick<AuditLog, 'change'>;
}

function checkDescription(raw: string | null | undefined): string {
  const description = raw?.trim() ?? '';
  if (description.length > DESCRIPTION_MAX || /[\x00-\x1f\x7f]/.test(description)) {
    throw new InputError('description', `must be at most ${DESCRIPTION_MAX} characters, no control characters`);
  }
  return description;
}

/**
 * SCIM secret tokens (docs/scim-provisioning.md "Tokens"): made and revoked by an administrator, each an
 * admin change with its audit event; checked on every SCIM request. Nothing is cached: a check is one
 * read of a unique index, so a revocation holds at once on every process of a cluster.
 */
export function scimTokens(
  queries: ScimTokenQueries,
  deps: {
    /** The configured `plugin: scim` backends' ids (src/scim/backends.ts). */
    backends: readonly string[];
    transaction: Transaction<TokenTransaction>;
    logger: Logger;
  },
) {
  const { backends, transaction, logger } = deps;

  function checkBackend(backend: string): string {
    if (backends.includes(backend)) return backend;
    throw new InputError(
      'backend',
      backends.length === 0
        ? 'no backend of plugin "scim" is configured (identity.backends): SCIM tokens are for those'
        : `${JSON.stringify(backend)} is not a backend of plugin "scim"; the SCIM backends are: ${backends.join(', ')}`,
    );
  }

  return {
    /** Every token, newest first, without its secret. */
    list: (): Promise<ScimToken[]> => queries.list(),

    /** A new token for `backend`: the secret is returned here, once, and never again. */
    async create(backend: string, description: string | null | undefined, actor: Actor): Promise<CreatedScimToken> {
      const scimToken: ScimToken = {
        id: randomUUID(),
        backend: checkBackend(backend),
        description: checkDescription(description),
        createdBy: actor.userId ?? actor.clientId ?? null,
        createdAt: clock.now(),
        lastUsedAt: null,
      };
      const token = `${SCIM_TOKEN_PREFIX}${randomToken(32)}`;
      await transaction(async (tx) => {
        await tx.queries.scimTokens.insert(scimToken, hashToken(token));
        await tx.audit.change('scim_token.create', actor, {}, { scimTokenId: scimToken.id, backend: scimToken.backend });
      });
      return { token, scimToken };
    },

    /** Revokes a token: the next request carrying it is refused, on every process. False when there is no such token. */
    revoke(id: string, actor: Actor): Promise<boolean> {
      return transaction(async (tx) => {
        const token = await tx.queries.scimTokens.find(id);
        if (!token) return false;
        await tx.queries.scimTokens.remove(id);
        await tx.audit.change('scim_token.revoke', actor, {}, { scimTokenId: id, backend: token.backend });
        return true;
      });
    },

    /**
     * The caller a SCIM request's bearer secret names, or undefined: unknown, revoked, malformed, or
     * for a backend no longer configured. Records the use, at most once a minute per token.
     */
    async verify(secret: string): Promise<VerifiedScimToken | undefined> {
      if (!TOKEN_SHAPE.test(secret)) return undefined;
      const found = await queries.findByHash(hashToken(secret));
      if (!found) return undefined;
      if (!backends.includes(found.backend)) {
        logger.warn(
          { scimTokenId: found.id, backend: found.backend },
          'SCIM token refused: its backend is no longer a configured scim backend',
        );
        return undefined;
      }
      const now = clock.now();
      if (found.lastUsedAt === null || found.lastUsedAt <= now - TOUCH_EVERY_MS) {
        // Bookkeeping: a failed write is logged and the request still goes on.
        await queries.touch(found.id, now, now - TOUCH_EVERY_MS).catch((err: unknown) => {
          logger.warn({ scimTokenId: found.id, err: (err as Error).message }, 'SCIM token: last use not recorded');
        });
      }
      return { id: found.id, backend: found.backend };
    },
  };
}

export type ScimTokens = ReturnType<typeof scimTokens>;
