import type { RequestHandler } from 'express';
import type { AppContext } from '../context.ts';

export const healthHandler: RequestHandler = (_req, res) => {
  res.json({ status: 'ok' });
};

/**
 * docs/decisions.md: 503 only when the database is down, or refuses writes (a full disk: reads still work, but
 * no token can be issued). A directory outage is reported in the body but keeps the node in the load
 * balancer, since the other backends still work.
 */
export const readyHandler =
  (ctx: AppContext): RequestHandler =>
  async (_req, res) => {
    let database: 'up' | 'down' = 'up';
    try {
      await ctx.ping();
      await ctx.dbOutage.checkWrites();
    } catch {
      database = 'down';
    }
    const backends = await ctx.identity.health();
    res.setHeader('Cache-Control', 'no-store');
    res.status(database === 'up' ? 200 : 503).json({ database, backends });
  };
