import type { Client } from '../clients/model.ts';
import { clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import { hashToken, randomToken } from '../crypto/tokens.ts';
import type { Amr } from '../login/model.ts';
import type { TokenQueries } from './queries.ts';
import type { CodeRow } from './model.ts';
import { replays } from './replays.ts';
import type { AuditTrail } from './trail.ts';

/** What a code is issued for: the stored row's fields, for a client, with the factors the sign-in used. */
export interface CodeRequest
  extends Pick<CodeRow, 'userId' | 'sessionId' | 'redirectUri' | 'scope' | 'nonce' | 'codeChallenge' | 'codeChallengeMethod' | 'authTime'> {
  client: Client;
  /** RFC 8707: the resources the request named (space-separated), bound to the code. */
  resource?: string | null;
  amr: Amr[];
}

/**
 * Where a found code keeps its hash. Only the token service reads it: a grant hands the found code
 * back whole, so a code is hashed once per exchange and no hash travels outside src/tokens.
 */
export const CODE_HASH: unique symbol = Symbol('code hash');

/**
 * A code looked up for its exchange, not spent yet. `signInEnded`: the code was refused since (its
 * user's credentials changed) or its session is gone (docs/decisions.md): the exchange must answer `invalid_grant`.
 */
export interface FoundCode extends Omit<CodeRow, 'codeHash'> {
  signInEnded: boolean;
  readonly [CODE_HASH]: string;
}

export const codeRules = (queries: TokenQueries, config: Config) => ({
  async issueCode(req: CodeRequest): Promise<string> {
    const code = randomToken();
    const now = clock.now();
    await queries.insertCode({
      code_hash: hashToken(code),
      client_id: req.client.clientId,
      user_id: req.userId,
      session_id: req.sessionId,
      redirect_uri: req.redirectUri,
      scope: req.scope,
      nonce: req.nonce,
      code_challenge: req.codeChallenge,
      code_challenge_method: req.codeChallengeMethod,
      auth_time: req.authTime,
      amr: JSON.stringify(req.amr),
      resource: req.resource ?? null,
      expires_at: now + config.tokens.codeTtl * 1000,
      created_at: now,
    });
    return code;
  },

  /**
   * Looks a code up for an exchange; nothing is spent yet (that happens with the issue, in one
   * transaction). A code already used is a replay (replays.ts), presented by `clientId`.
   */
  async findCode(code: string, clientId: string, trail: AuditTrail): Promise<FoundCode | 'invalid' | 'replayed' | 'expired'> {
    const now = clock.now();
    const codeHash = hashToken(code);
    const found = await queries.findCode(codeHash);
    if (!found) return 'invalid';
    if (found.consumed) {
      await replays(queries).codeReplayed(codeHash, clientId, trail);
      return 'replayed';
    }
    const { codeHash: _hash, ...row } = found.row;
    if (row.expiresAt <= now) return 'expired';
    const sessionGone = row.sessionId !== null && (row.sessionExpiresAt === null || row.sessionExpiresAt <= now);
    return { ...row, signInEnded: row.revokedAt !== null || sessionGone, [CODE_HASH]: codeHash };
  },

  /** A failed exchange uses the code up all the same. */
  useUpCode: (code: FoundCode) => queries.useUpCode(code[CODE_HASH], clock.now()),
});
