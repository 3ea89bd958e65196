import type { Request } from 'express';
import type { Origin } from '../audit/model.ts';

/** Where a request's act comes from, as its audit event names it: the caller's address and the request id. */
export const originOf = (req: Request): Origin => ({ ip: req.ip, requestId: req.id });
