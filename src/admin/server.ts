import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { projectRoot } from '../root.ts';
import { authenticateAdmin } from './auth.ts';
import { adminContext, type AdminContext } from './context.ts';
import { isDatabaseUnavailable } from '../db/outage.ts';
import { bodyErrorStatus } from '../http/errors.ts';
import { formatError, serviceUnavailable } from './errors.ts';
import { inputGuard } from './input-guard.ts';
import { costLimit, queryLimits } from './limits.ts';
import { buildASTSchema, parse } from 'graphql';
import { accessResolvers } from './resolvers/access.ts';
import { auditResolvers } from './resolvers/audit.ts';
import { directorySyncResolvers } from './resolvers/directory-sync.ts';
import { clientResolvers } from './resolvers/clients.ts';
import { keyResolvers } from './resolvers/keys.ts';
import { samlResolvers } from './resolvers/saml.ts';
import { scimResolvers } from './resolvers/scim.ts';
import { webhookResolvers } from './resolvers/webhooks.ts';
import { userResolvers } from './resolvers/users.ts';
import { adminRoleResolvers } from './resolvers/admin-roles.ts';
import { guardResolvers } from './permissions.ts';

const schemaDir = resolve(projectRoot, 'graphql');
/** The SDL: every `graphql/*.graphql` file, in name order (as codegen reads them). */
export const typeDefs = readdirSync(schemaDir)
  .filter((f) => f.endsWith('.graphql'))
  .sort()
  .map((f) => readFileSync(resolve(schemaDir, f), 'utf8'));

/** The schema as the SDL declares it, directives included: what the permission check and the cost limit read. */
export const declaredSchema = buildASTSchema(parse(typeDefs.join('\n')));

/** The cost limit: 5,000, or a fifth above what the whole schema's introspection costs (limits.ts). */
const MAX_COST = costLimit(declaredSchema, 5000);

/** A body that is not JSON, or too large, answered in the GraphQL error shape. */
const bodyErrors: ErrorRequestHandler = (err, _req, res, next) => {
  const status = bodyErrorStatus(err);
  if (status === undefined) return next(err);
  const message = status === 413 ? 'the request body is too large' : 'the request body is not valid JSON';
  res.status(status).json({ errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] });
};

/** The Apollo admin API at `/graphql`: depth and cost limits, masked errors, CSRF prevention on. */
export async function adminApi(ctx: AppContext): Promise<{ handlers: Array<RequestHandler | ErrorRequestHandler>; stop(): Promise<void> }> {
  const server = new ApolloServer<AdminContext>({
    typeDefs,
    // Every operation behind its `@requires` check (docs/admin-api.md "Roles and permissions").
    resolvers: guardResolvers(declaredSchema, [
      adminRoleResolvers,
      clientResolvers,
      userResolvers,
      auditResolvers,
      keyResolvers,
      samlResolvers,
      accessResolvers,
      scimResolvers,
      directorySyncResolvers,
      webhookResolvers,
    ] as never) as never,
    formatError,
    validationRules: [queryLimits(10, MAX_COST)],
    // Every request must carry an admin token (the context below), so introspection is for admins only.
    introspection: true,
    includeStacktraceInErrorResponses: false,
    stopOnTerminationSignals: false,
    plugins: [
      inputGuard,
      {
        async requestDidStart() {
          return {
            async didEncounterErrors({ errors, contextValue, response }) {
              for (const error of errors) {
                if (isDatabaseUnavailable(error.originalError)) {
                  // One log line per outage, and 503 so that clients and balancers retry.
                  ctx.dbOutage.report(error.originalError, contextValue.requestId);
                  if (response.http) response.http.status = 503;
                  continue;
                }
                const code = error.extensions?.code;
                if (code && code !== 'INTERNAL_SERVER_ERROR') continue;
                if (error.originalError && 'field' in error.originalError) continue;
                // Tag the error so the masked answer carries the id the log line has.
                (error.extensions as Record<string, unknown>).requestId = contextValue.requestId;
                ctx.logger.error(
                  { err: error.originalError ?? error, requestId: contextValue.requestId, path: error.path },
                  'admin API error',
                );
              }
            },
          };
        },
      },
    ],
  });
  await server.start();
  const graphql = expressMiddleware(server, {
    context: async ({ req }) => {
      try {
        return adminContext(ctx, await authenticateAdmin(ctx, req), req);
      } catch (err) {
        if (!isDatabaseUnavailable(err)) throw err;
        ctx.dbOutage.report(err, req.id);
        throw serviceUnavailable();
      }
    },
  });
  return {
    handlers: [express.json({ limit: '64kb' }), bodyErrors, graphql],
    stop: () => server.stop(),
  };
}
