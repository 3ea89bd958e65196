import { expect } from '@jest/globals';
import express from 'express';
import type { Server } from 'node:http';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { freePort } from './ports.ts';

/** A relying party's back-channel logout endpoint (OpenID Connect Back-Channel Logout 1.0) for tests. */
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** The `sid` claim of a JWT, unverified (to pick a receiver's token; verification comes after). */
export const sidOf = (jwt: string): string => (JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid;

export type Mode = 'ok' | 'hang' | 'fail-once' | 'fail';

/** A relying party's back-channel logout endpoint: an express app on a loopback port. */
export class Receiver {
  readonly tokens: string[] = [];
  /** POSTs received, answered or not. */
  hits = 0;
  /** Requests it is holding without an answer (mode `hang`). */
  waiting = 0;
  mode: Mode = 'ok';
  private server?: Server;

  constructor(readonly port: number) {}

  get uri() {
    return `http://127.0.0.1:${this.port}/backchannel-logout`;
  }

  static async start(port?: number): Promise<Receiver> {
    const r = new Receiver(port ?? (await freePort()));
    await r.listen();
    return r;
  }

  listen(): Promise<void> {
    const app = express();
    app.post('/backchannel-logout', express.urlencoded({ extended: false }), (req, res) => {
      this.hits += 1;
      if (this.mode === 'hang') {
        this.waiting += 1;
        res.on('close', () => (this.waiting -= 1));
        return;
      }
      if (this.mode === 'fail' || this.mode === 'fail-once') {
        if (this.mode === 'fail-once') this.mode = 'ok';
        res.status(500).end();
        return;
      }
      this.tokens.push((req.body as { logout_token: string }).logout_token);
      res.status(200).set('cache-control', 'no-store').end();
    });
    return new Promise((resolve) => {
      this.server = app.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  /** The token it received for session `sid`, if any (one receiver hears of several sessions). */
  tokenFor(sid: string): string | undefined {
    return this.tokens.find((t) => sidOf(t) === sid);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** Checks a logout token as a relying party must (Back-Channel Logout 1.0, 2.6), with the published keys. */
export async function verifyLogoutToken(
  server: { url: string; ctx: { config: { publicUrl: string } } },
  token: string,
  clientId: string,
): Promise<JWTPayload> {
  const jwks = createRemoteJWKSet(new URL(`${server.url}/connect/v10/jwks`));
  const { payload } = await jwtVerify(token, jwks, {
    issuer: server.ctx.config.publicUrl,
    audience: clientId,
    typ: 'logout+jwt',
    maxTokenAge: '2 min',
  });
  expect(payload.events).toEqual({ [EVENT]: {} });
  expect(payload).not.toHaveProperty('nonce');
  expect(typeof payload.jti).toBe('string');
  expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(120);
  expect(decodeProtectedHeader(token).typ).toBe('logout+jwt');
  return payload;
}
