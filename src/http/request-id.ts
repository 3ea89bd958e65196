import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';

declare module 'express-serve-static-core' {
  interface Request {
    /** Correlates a request's log lines and its error answers. */
    id: string;
  }
}

const acceptable = /^[\w.:-]{1,64}$/;

/** Takes a sane `X-Request-Id` from the proxy in front, or makes one; echoes it on the response. */
export const requestId: RequestHandler = (req, res, next) => {
  const given = req.headers['x-request-id'];
  req.id = typeof given === 'string' && acceptable.test(given) ? given : randomUUID();
  res.setHeader('X-Request-Id', req.id);
  next();
};
