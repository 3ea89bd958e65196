import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { isDatabaseUnavailable } from '../db/outage.ts';
import { ForbiddenError, InputError, NotFoundError } from '../errors/service.ts';
import { BackendUnavailableError } from '../identity/contract.ts';

const UNAVAILABLE_MESSAGE = 'the database is unreachable; try again later';

/**
 * The caller may not do this (docs/admin-api.md "Roles and permissions"): HTTP 403, the message naming
 * what is missing, and `extensions.permission` the permission when one would do.
 */
export const forbidden = (message: string, permission?: string) =>
  new GraphQLError(message, { extensions: { code: 'FORBIDDEN', ...(permission ? { permission } : {}), http: { status: 403 } } });

/** docs/decisions.md: the database is down. HTTP 503, in the GraphQL error shape. */
export const serviceUnavailable = () =>
  new GraphQLError(UNAVAILABLE_MESSAGE, {
    extensions: { code: 'SERVICE_UNAVAILABLE', http: { status: 503, headers: new Map([['retry-after', '5']]) } },
  });

const knownCodes = new Set([
  'SERVICE_UNAVAILABLE',
  'BAD_USER_INPUT',
  'NOT_FOUND',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
]);

/**
 * The one place errors get their GraphQL shape: the services' input errors become BAD_USER_INPUT
 * naming the field; anything unexpected is masked to INTERNAL_SERVER_ERROR with the request id
 * (the details are logged, see the plugin in server.ts).
 */
export function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const original = unwrapResolverError(error);
  if (original instanceof InputError) {
    return { ...formatted, message: original.message, extensions: { code: 'BAD_USER_INPUT', field: original.field } };
  }
  if (original instanceof NotFoundError) {
    return { ...formatted, message: original.message, extensions: { code: 'NOT_FOUND', field: original.field } };
  }
  if (original instanceof ForbiddenError) {
    // Turned into a 403 by the permission check (permissions.ts); this keeps the code should one slip past.
    return {
      ...formatted,
      message: original.message,
      extensions: { code: 'FORBIDDEN', ...(original.permission ? { permission: original.permission } : {}) },
    };
  }
  if (isDatabaseUnavailable(original)) {
    return { message: UNAVAILABLE_MESSAGE, path: formatted.path, extensions: { code: 'SERVICE_UNAVAILABLE' } };
  }
  if (original instanceof BackendUnavailableError) {
    // A directory out of reach while writing a password (setUserPassword): nothing was written.
    return {
      message: `the identity backend is unreachable; nothing was changed: ${original.message}`,
      path: formatted.path,
      extensions: { code: 'SERVICE_UNAVAILABLE' },
    };
  }
  const code = formatted.extensions?.code;
  if (typeof code === 'string' && knownCodes.has(code)) {
    const { stacktrace: _hidden, ...extensions } = formatted.extensions ?? {};
    return { ...formatted, extensions };
  }
  const requestId = (error as { extensions?: { requestId?: string } })?.extensions?.requestId;
  return {
    message: `internal error${requestId ? ` (request id ${requestId})` : ''}`,
    path: formatted.path,
    extensions: { code: 'INTERNAL_SERVER_ERROR', ...(requestId ? { requestId } : {}) },
  };
}
