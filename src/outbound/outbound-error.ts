/**
 * What went wrong with an outbound call, as a fixed short reason ("HTTP 500", "refused address", …).
 * Audit events, logs and error answers show this and nothing else: a server on the internal network
 * must not be able to make Latchkey repeat what it answered (docs/decisions.md "Outbound fetches").
 */
export type OutboundFailure = 'refused' | 'connect' | 'timeout' | 'too-large' | 'status' | 'bad-answer';

export class OutboundError extends Error {
  override readonly name = 'OutboundError';

  constructor(
    readonly failure: OutboundFailure,
    /** The fixed reason; safe to record anywhere. */
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** The fixed reason of any error of an outbound call: its own, or "cannot connect" for anything else. */
export const outboundReason = (err: unknown): string => (err instanceof OutboundError ? err.reason : 'cannot connect');

/** An OutboundError anywhere in an error's chain of causes (libraries wrap what their fetch threw). */
export function findOutboundError(err: unknown): OutboundError | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof OutboundError) return e;
  }
  return undefined;
}
