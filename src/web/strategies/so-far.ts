import type { Request, Response } from 'express';
import type { Amr } from '../../login/model.ts';
import type { User } from '../../users/model.ts';
import { attemptOf } from '../attempt.ts';

/**
 * What the route knows of this browser's sign-in before a strategy runs: the client it is for ('' at
 * the account page), and the user and factors a password or a session gave already. It travels on the
 * response's locals, Express's place for a request's own state, because passport hands a strategy the
 * request only.
 */
export interface SignInSoFar {
  clientId: string;
  user?: User;
  amr?: Amr[];
}

interface Locals {
  signInSoFar?: SignInSoFar;
}

export const setSoFar = (res: Response, soFar: SignInSoFar): void => {
  (res.locals as Locals).signInSoFar = soFar;
};

/** The sign-in so far, and where the attempt comes from, as the counted sign-in sequence records it. */
export function soFarOf(req: Request) {
  const soFar = (req.res?.locals as Locals | undefined)?.signInSoFar ?? { clientId: '' };
  return { soFar, origin: attemptOf(req, soFar.clientId) };
}
