import type { Request } from 'express';
import type { Client } from '../../clients/queries.ts';
import type { AppContext } from '../../context.ts';
import type { Spend } from '../../tokens/queries.ts';
import type { User } from '../../users/queries.ts';
import type { Amr } from '../../mfa/service.ts';
import type { Params } from '../params.ts';

/** What a grant decides; the dispatcher does the rest (issue, id_token, response, audit) for all. */
export interface GrantResult {
  userId: string | null;
  scopes: string[];
  familyId?: string;
  codeHash?: string;
  /** What the tokens are issued for, spent with their issue in one transaction. */
  spend?: Spend;
  sessionId?: string | null;
  authTime?: number | null;
  /** How the user signed in (RFC 8176): the id_token's `amr`, kept with a refresh token. */
  amr?: Amr[] | null;
  nonce?: string | null;
  /** The user, when the grant has already read it: spares the id_token a second read. */
  user?: User;
}

export type Grant = (ctx: AppContext, req: Request, p: Params, client: Client) => Promise<GrantResult>;
