/**
 * Input a service refuses, naming the field: GraphQL answers it BAD_USER_INPUT with `extensions.field`,
 * the CLI prints it and exits 2.
 */
export class InputError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** The thing an operation names does not exist: GraphQL NOT_FOUND naming the field, the CLI exit 2. */
export class NotFoundError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * An act the caller's admin roles do not allow (docs/admin-api.md "Roles and permissions"): GraphQL
 * FORBIDDEN (403), its message naming the permission or role that is missing.
 */
export class ForbiddenError extends Error {
  constructor(
    message: string,
    /** The permission missing, when one permission would do. */
    readonly permission?: string,
  ) {
    super(message);
  }
}
