import type { RequestListener, ServerOptions } from 'node:http';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import helmet from 'helmet';
import { adminConsole } from './admin-console/route.ts';
import { scimRouter } from './scim-api/router.ts';
import type { AppContext } from './context.ts';
import { errorHandler, notFound } from './http/errors.ts';
import { ExactRoutes } from './http/exact-routes.ts';
import { expressMessages } from './http/express-messages.ts';
import { clientPreflight, publicCors, publicPreflight } from './http/cors.ts';
import { requestId } from './http/request-id.ts';
import { styleHash } from './web/pages/layout.ts';
import { accountHandlers } from './web/account/route.ts';
import { APPS_PATH, appsHandler } from './web/apps/route.ts';
import { passwordResetHandlers } from './web/password-reset/route.ts';
import { FORGOT_PATH, RESET_PATH } from './web/password-reset/pages.ts';
import { passkeyOptionsHandler, passkeyScriptHandler } from './web/passkey/route.ts';
import { authorizeHandler } from './oauth/authorize/route.ts';
import { deviceAuthorizationHandler } from './oauth/device/route.ts';
import { deviceHandler } from './web/device.ts';
import { upstreamCallbackHandler } from './web/upstream-callback.ts';
import { introspectHandler } from './oauth/introspect/route.ts';
import { logoutHandler } from './oauth/logout/route.ts';
import { revokeHandler } from './oauth/revoke/route.ts';
import { tokenHandler } from './oauth/token/route.ts';
import { meHandler, userinfoHandler } from './oauth/userinfo/route.ts';
import { discoveryHandler, jwksHandler } from './oidc/discovery.ts';
import { recordRequests, routeLabel } from './metrics/http.ts';
import { traceRequests } from './telemetry/http.ts';
import { tracingOn } from './telemetry/trace.ts';
import { metricsHandler } from './ops/metrics.ts';
import { healthHandler, readyHandler } from './ops/health.ts';
import { paths } from './paths.ts';
import { SAML_PATHS } from './saml/idp.ts';
import { samlMetadataHandler } from './web/saml/metadata.ts';
import { samlSloHandler } from './web/saml/slo.ts';
import { samlSsoHandler } from './web/saml/sso.ts';

/**
 * The Express app. Each route carries only the middleware it needs: the token, me and userinfo paths
 * parse a form body and nothing else (no cookies, no sessions, no helmet), so they stay lean. Routes
 * are found by their exact path first (ExactRoutes), Express's router second.
 */
export function createApp(
  ctx: AppContext,
  admin?: Promise<{ handlers: Array<RequestHandler | ErrorRequestHandler> }>,
): { listener: RequestListener; messages: Pick<ServerOptions, 'IncomingMessage' | 'ServerResponse'> } {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (ctx.config.trustProxy) {
    const v = ctx.config.trustProxy;
    app.set('trust proxy', v === 'true' ? true : /^\d+$/.test(v) ? Number(v) : v);
    if (v === 'true') {
      // Every hop trusted: the client address is the first X-Forwarded-For entry, which the client
      // itself writes. A guesser then picks a new address per attempt and the per-address block never fires.
      ctx.logger.warn(
        'TRUST_PROXY=true trusts every X-Forwarded-For hop: any client can choose the address it is seen from, which defeats the per-address brute-force block and falsifies the audit trail. Set the number of proxies in front (e.g. TRUST_PROXY=1) or their addresses (e.g. TRUST_PROXY=10.0.0.0/8) instead.',
      );
    }
  }
  // Every request's first middleware, run by the router or, on an exact route, by exact.front. The
  // server span (docs/tracing.md) comes first, so that everything after runs inside it; only when tracing is on.
  const first = [...(tracingOn() ? [traceRequests()] : []), recordRequests(ctx.metrics), requestId];
  app.use(...first);
  const exact = new ExactRoutes(app, notFound);
  app.use(exact.dispatch);
  const route = (path: string) => exact.route(path);

  // docs/decisions.md: forms above 64 KiB are refused with 413.
  const form = express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 100 });
  const htmlHeaders = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        styleSrc: [styleHash],
        // The one script (passkeys) is a file from this origin, and it talks only to this origin.
        scriptSrc: ["'self'"],
        connectSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        baseUri: ["'none'"],
        frameAncestors: ["'none'"],
      },
    },
    xFrameOptions: { action: 'deny' },
    strictTransportSecurity: ctx.config.publicUrl.startsWith('https:'),
  });

  const authorize = authorizeHandler(ctx);
  for (const path of paths.authorize) route(path).get(htmlHeaders, authorize).post(htmlHeaders, form, authorize);
  const token = tokenHandler(ctx);
  for (const path of paths.token) route(path).get(token).post(form, token);
  const me = meHandler(ctx);
  for (const path of paths.me) route(path).get(me).post(form, me);
  const userinfo = userinfoHandler(ctx);
  for (const path of paths.userinfo) route(path).get(userinfo).post(form, userinfo);

  route(paths.introspect).post(form, introspectHandler(ctx));
  route(paths.revoke).post(form, revokeHandler(ctx));
  // CORS preflights (docs/connect-an-application.md): OPTIONS is not in the exact table, so the router answers them here.
  const preflight = clientPreflight((origin) => ctx.clients.originRegistered(origin));
  for (const path of [...paths.token, ...paths.me, ...paths.userinfo, paths.revoke]) app.options(path, preflight);
  route('/assets/passkey.js').get(passkeyScriptHandler);
  route('/passkey/options').post(form, passkeyOptionsHandler(ctx));
  const account = accountHandlers(ctx);
  route('/account').get(htmlHeaders, account.account).post(htmlHeaders, form, account.account);
  route('/account/mfa/totp').get(htmlHeaders, account.totp).post(htmlHeaders, form, account.totp);
  // docs/access-and-claims.md "My applications".
  const apps = appsHandler(ctx);
  route(APPS_PATH).get(htmlHeaders, apps).post(htmlHeaders, form, apps);
  if (ctx.passwordReset.enabled || ctx.passwordReset.invitations) {
    const reset = passwordResetHandlers(ctx);
    if (ctx.passwordReset.enabled) route(FORGOT_PATH).get(htmlHeaders, reset.forgot).post(htmlHeaders, form, reset.forgot);
    // An invitation's link (docs/scim-provisioning.md "How SCIM users sign in") is a reset link: the same page.
    route(RESET_PATH).get(htmlHeaders, reset.reset).post(htmlHeaders, form, reset.reset);
  }
  const device = deviceHandler(ctx);
  route(paths.device).get(htmlHeaders, device).post(htmlHeaders, form, device);
  route(paths.deviceAuthorization).post(form, deviceAuthorizationHandler(ctx));
  // docs/upstream-identity-providers.md: the upstream identity providers' callbacks, one path each (the id in the path).
  if (ctx.config.identity.upstreams.length > 0)
    app.get('/login/upstream/:id/callback', routeLabel('/login/upstream/:id/callback'), htmlHeaders, upstreamCallbackHandler(ctx));
  const logout = logoutHandler(ctx);
  route(paths.logout).get(htmlHeaders, logout).post(htmlHeaders, form, logout);

  // SAML 2.0 (docs/saml-applications.md): the POST binding's SAMLRequest is a form field like any other.
  const sso = samlSsoHandler(ctx);
  route(SAML_PATHS.sso).get(htmlHeaders, sso).post(htmlHeaders, form, sso);
  route(SAML_PATHS.slo).get(htmlHeaders, samlSloHandler(ctx));
  route(SAML_PATHS.metadata).get(publicCors, samlMetadataHandler(ctx));

  const discovery = discoveryHandler(ctx);
  const publicDocuments = ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server', paths.jwks];
  route(publicDocuments[0]!).get(publicCors, discovery);
  route(publicDocuments[1]!).get(publicCors, discovery);
  route(paths.jwks).get(publicCors, jwksHandler(ctx));
  for (const path of publicDocuments) app.options(path, publicPreflight);

  // SCIM 2.0 (docs/scim-provisioning.md): its own application/scim+json body parser and SCIM-shaped errors;
  // mounted before anything else that reads a body or answers errors its own way.
  app.use(scimRouter(ctx));

  if (admin) {
    const graphql = admin.then(({ handlers }) => express.Router().use(...handlers));
    // A failed start is logged where it is started (server.ts); requests then get server_error.
    graphql.catch(() => undefined);
    app.use('/graphql', routeLabel('/graphql'), (req, res, next) => {
      graphql.then((router) => router(req, res, next), next);
    });
  }

  app.use('/admin', routeLabel('/admin'), adminConsole(ctx));

  route('/healthz').get(healthHandler);
  route('/readyz').get(readyHandler(ctx));
  route('/metrics').get(metricsHandler(ctx));

  app.use(notFound);
  const fail = errorHandler(ctx.logger, ctx.dbOutage);
  app.use(fail);
  return { listener: exact.front(first, fail), messages: expressMessages(app) };
}
