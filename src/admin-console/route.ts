import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import express, { type RequestHandler, type Router } from 'express';
import helmet from 'helmet';
import type { AppContext } from '../context.ts';
import { projectRoot } from '../root.ts';

/** Where `npm run build` (and so `npm ci` and `npm start`) puts the console: console/ compiled by esbuild. */
const built = join(projectRoot, 'dist/console');

const escapeAttribute = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * The admin console (docs/admin-console.md) at /admin: a page, and the script and style sheet it loads from
 * /admin/assets, all from this server. The page's CSP allows nothing else: scripts and styles from
 * this origin only (no inline code, no eval, DOM sinks behind Trusted Types), requests to this
 * origin only, no frames around it. The console is a client of the public interfaces (the code flow
 * as `admin-console`, then GraphQL): it can do nothing a script with an admin token cannot.
 */
export function adminConsole(ctx: AppContext): Router {
  const router = express.Router();
  router.use(
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'none'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'"],
          imgSrc: ["'self'", 'data:'],
          connectSrc: ["'self'"],
          formAction: ["'none'"],
          baseUri: ["'none'"],
          frameAncestors: ["'none'"],
          requireTrustedTypesFor: ["'script'"],
        },
      },
      xFrameOptions: { action: 'deny' },
      strictTransportSecurity: ctx.config.publicUrl.startsWith('https:'),
    }),
  );
  // Named by their content's hash: a new build has new names, so these can be kept for good.
  router.use('/assets', express.static(join(built, 'assets'), { immutable: true, maxAge: '365d', index: false, redirect: false }));

  // The page for /admin/ and /admin/<page> (the console's own routes: clients, users, callback, …).
  // Mounted with `use`, not as routes: the metrics label is then `/admin` for all of them.
  const page: RequestHandler = async (req, res, next) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !/^\/([a-z-]{1,32})?$/.test(req.path)) return next();
    // /admin → /admin/, relative, so that a proxy's path prefix stays: the page's assets are relative to it.
    if (!req.originalUrl.split('?')[0]!.endsWith('/') && req.path === '/') {
      const query = req.originalUrl.indexOf('?');
      return res.redirect(302, `admin/${query >= 0 ? req.originalUrl.slice(query) : ''}`);
    }
    res.setHeader('Cache-Control', 'no-store');
    let html: string;
    try {
      html = await readFile(join(built, 'index.html'), 'utf8');
    } catch {
      res.status(503).type('text/plain').send('The admin console has not been built: run `npm run build` (npm ci and npm start do it).\n');
      return;
    }
    res.type('html').send(html.replace('%ISSUER%', escapeAttribute(ctx.config.publicUrl)));
  };
  router.use(page);
  return router;
}
