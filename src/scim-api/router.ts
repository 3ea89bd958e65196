/**
 * The SCIM 2.0 endpoint at `/scim/v2` (docs/scim-provisioning.md "What the endpoint supports"):
 * each route reads the request, calls one service of `ctx.scim`, and writes the answer as
 * `application/scim+json`. Its own JSON body parser takes `application/scim+json` and
 * `application/json`, up to MAX_BODY_BYTES; every error is answered in SCIM's shape.
 */
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { AppContext } from '../context.ts';
import { originOf } from '../http/origin.ts';
import { routeLabel } from '../metrics/http.ts';
import { MAX_BODY_BYTES } from '../scim/discovery.ts';
import { SCIM_SCHEMAS, type ScimCaller, type ScimListPage } from '../scim/model.ts';
import { SCIM_PATH } from '../scim/service.ts';
import { scimCaller } from './auth.ts';
import { listRequestOf, projectionOf, searchBodyOf } from './list-request.ts';
import { scimErrorHandler, scimNotFound, sendResource, sendScim } from './respond.ts';
import { project } from '../scim/documents.ts';
import { GROUP_SCHEMAS, USER_SCHEMAS } from '../scim/schemas.ts';

declare module 'express-serve-static-core' {
  interface Locals {
    scimCaller?: ScimCaller;
  }
}

type Handler = (req: Request, res: Response, caller: ScimCaller) => Promise<void>;

/** An async route with the caller the authentication step found; its faults go to the error handler. */
const handle =
  (h: Handler): RequestHandler =>
  (req, res, next) => {
    h(req, res, res.locals.scimCaller!).catch(next);
  };

const ifMatchOf = (req: Request): string | undefined => req.get('if-match') ?? undefined;

function sendList(res: Response, page: ScimListPage): void {
  sendScim(res, 200, {
    schemas: [SCIM_SCHEMAS.listResponse],
    totalResults: page.totalResults,
    startIndex: page.startIndex,
    itemsPerPage: page.resources.length,
    Resources: page.resources,
  });
}

export function scimRouter(ctx: AppContext): Router {
  const router = express.Router();
  const at = (path: string) => `${SCIM_PATH}${path}`;
  const json = express.json({ type: ['application/scim+json', 'application/json', 'application/*+json'], limit: MAX_BODY_BYTES });
  const authenticate: RequestHandler = (req, res, next) => {
    scimCaller(ctx, req).then((caller) => {
      res.locals.scimCaller = caller;
      next();
    }, next);
  };
  router.use(SCIM_PATH, routeLabel(SCIM_PATH), authenticate, json);

  const { discovery } = ctx.scim;
  router.get(at('/ServiceProviderConfig'), (_req, res) => sendScim(res, 200, discovery.serviceProviderConfig()));
  router.get(at('/ResourceTypes'), (_req, res) => sendScim(res, 200, discovery.resourceTypes()));
  router.get(at('/ResourceTypes/:name'), (req, res) => sendScim(res, 200, discovery.resourceType(String(req.params.name))));
  router.get(at('/Schemas'), (_req, res) => sendScim(res, 200, discovery.schemas()));
  router.get(at('/Schemas/:id'), (req, res) => sendScim(res, 200, discovery.schema(String(req.params.id))));

  router.post(
    at('/.search'),
    handle(async (req, res, caller) => sendList(res, await ctx.scim.search(caller, listRequestOf(searchBodyOf(req.body))))),
  );

  for (const [path, service, schemas] of [
    ['/Users', ctx.scim.users, USER_SCHEMAS],
    ['/Groups', ctx.scim.groups, GROUP_SCHEMAS],
  ] as const) {
    const one = at(`${path}/:id`);
    router.get(
      at(path),
      handle(async (req, res, caller) => sendList(res, await service.list(caller, listRequestOf(req.query as Record<string, unknown>)))),
    );
    router.post(
      at(`${path}/.search`),
      handle(async (req, res, caller) => sendList(res, await service.list(caller, listRequestOf(searchBodyOf(req.body))))),
    );
    router.post(
      at(path),
      handle(async (req, res, caller) => {
        const doc = await service.create(caller, req.body, originOf(req));
        sendResource(res, 201, project(schemas, doc, projectionOf(req)), true);
      }),
    );
    router.get(
      one,
      handle(async (req, res, caller) => {
        const doc = await service.get(caller, String(req.params.id), projectionOf(req));
        const version = (doc.meta as { version?: string } | undefined)?.version;
        // RFC 7644 §3.14: a client holding the current version is told so without the body.
        if (
          version &&
          req
            .get('if-none-match')
            ?.split(',')
            .some((t) => t.trim() === version)
        )
          return sendScim(res, 304, undefined, { ETag: version });
        sendResource(res, 200, doc);
      }),
    );
    router.put(
      one,
      handle(async (req, res, caller) => {
        const doc = await service.replace(caller, String(req.params.id), req.body, { ifMatch: ifMatchOf(req), origin: originOf(req) });
        sendResource(res, 200, project(schemas, doc, projectionOf(req)));
      }),
    );
    router.patch(
      one,
      handle(async (req, res, caller) => {
        const doc = await service.patch(caller, String(req.params.id), req.body, { ifMatch: ifMatchOf(req), origin: originOf(req) });
        sendResource(res, 200, project(schemas, doc, projectionOf(req)));
      }),
    );
    router.delete(
      one,
      handle(async (req, res, caller) => {
        await service.remove(caller, String(req.params.id), { ifMatch: ifMatchOf(req), origin: originOf(req) });
        sendScim(res, 204);
      }),
    );
  }

  router.use(SCIM_PATH, scimNotFound);
  router.use(SCIM_PATH, scimErrorHandler(ctx.logger, ctx.dbOutage));
  return router;
}
