import type { ScimErrorType } from './model.ts';

/**
 * The one error of the SCIM interface, which is its wire format (RFC 7644 §3.12): a status, a
 * `scimType` where the RFC has one, and a detail for a person. Services throw it; the SCIM router
 * writes it (src/scim-api/errors.ts). Anything else that reaches the router is a 500, logged with
 * the request id.
 */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly scimType: ScimErrorType | undefined,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

export const scimErrors = {
  badRequest: (scimType: ScimErrorType, detail: string) => new ScimError(400, scimType, detail),
  unauthorized: (detail: string) => new ScimError(401, undefined, detail, { 'WWW-Authenticate': 'Bearer realm="latchkey-scim"' }),
  forbidden: (detail: string) => new ScimError(403, undefined, detail),
  notFound: (detail: string) => new ScimError(404, undefined, detail),
  conflict: (detail: string) => new ScimError(409, 'uniqueness', detail),
  preconditionFailed: (detail: string) => new ScimError(412, 'invalidVers', detail),
  tooLarge: (detail: string) => new ScimError(413, undefined, detail),
};
