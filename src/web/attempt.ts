import type { Request } from 'express';
import { DEVICE_COOKIE } from '../throttle/device-cookie.ts';
import { readCookie } from './cookies.ts';

/** Where a browser's sign-in attempt comes from, as the counted sign-in sequence records it. */
export const attemptOf = (req: Request, clientId: string) => ({
  ip: req.ip ?? 'unknown',
  clientId,
  requestId: req.id,
  // Keeps this browser counted on its own by the brute-force policy (docs/decisions.md).
  deviceCookie: readCookie(req, DEVICE_COOKIE),
});
