/**
 * Runs `work` with `S` (the services, or the slice of them a service needs) bound to one
 * transaction: it commits if `work` resolves, rolls back if it throws. Declared here, beside the
 * database code, so that a service names what it needs of a transaction without importing the
 * composition root that builds it (src/services.ts).
 */
export type Transaction<S> = <T>(work: (tx: S) => Promise<T>) => Promise<T>;
