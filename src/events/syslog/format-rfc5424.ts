import { severityOf, summaryOf } from './describe.ts';
import type { OutgoingEvent } from '../model.ts';

/** What every message of one process shares: where it comes from, and how the SIEM files it. */
export interface MessageOrigin {
  /** RFC 5424 facility number, 0-23. */
  facility: number;
  /** The IANA private enterprise number of the structured data's SD-ID (`latchkey@<n>`). */
  enterpriseId: number;
  hostname: string;
  procId: string;
  /** Latchkey's version (CEF's Device Version). */
  version: string;
}

/** PRINTUSASCII (`!` to `~`), at most `max` characters, or RFC 5424's NILVALUE when nothing is left. */
function printable(value: string, max: number): string {
  const clean = value.replace(/[^!-~]/g, '').slice(0, max);
  return clean === '' ? '-' : clean;
}

/**
 * RFC 5424's HEADER: `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID`, the MSGID being the event's
 * kind (at most 32 characters, as the RFC allows).
 */
export function header(e: OutgoingEvent, o: MessageOrigin): string {
  const pri = o.facility * 8 + severityOf(e.kind);
  return `<${pri}>1 ${new Date(e.at).toISOString()} ${printable(o.hostname, 255)} latchkey ${printable(o.procId, 128)} ${printable(e.kind, 32)}`;
}

/** RFC 5424 section 6.3.3: `"`, `\` and `]` are escaped with a backslash inside a PARAM-VALUE. */
export const escapeParamValue = (value: string): string => value.replace(/["\\\]]/g, (c) => `\\${c}`);

/** An SD-NAME: 1 to 32 printable characters other than `=`, space, `]` and `"`. */
const paramName = (key: string): string => key.replace(/[^!-~]|[="\]]/g, '_').slice(0, 32);

/** A detail's value as text: strings as they are, anything structured as JSON. */
const text = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

/** The event's own fields, in this order, before its details. */
const FIELDS = ['kind', 'eventId', 'userId', 'clientId', 'actorUserId', 'actorClientId', 'ip', 'requestId'] as const;

/**
 * The one SD-ELEMENT `[latchkey@<n> kind="…" eventId="…" userId="…" … <details>]`: the event's fields
 * that are set, then each detail under its own name (a detail named like a field gets `detail.` in
 * front, so neither hides the other).
 */
export function structuredData(e: OutgoingEvent, enterpriseId: number): string {
  const fields: Record<(typeof FIELDS)[number], string | null | undefined> = {
    kind: e.kind,
    eventId: e.id,
    userId: e.userId,
    clientId: e.clientId,
    actorUserId: e.actorUserId,
    actorClientId: e.actorClientId,
    ip: e.ip,
    requestId: e.requestId,
  };
  const params: string[] = [];
  const taken = new Set<string>(FIELDS);
  for (const name of FIELDS) {
    const value = fields[name];
    if (value != null && value !== '') params.push(`${name}="${escapeParamValue(value)}"`);
  }
  for (const [key, value] of Object.entries(e.details ?? {})) {
    if (value == null) continue;
    let name = paramName(key);
    if (name === '') continue;
    if (taken.has(name)) name = paramName(`detail.${key}`);
    taken.add(name);
    params.push(`${name}="${escapeParamValue(text(value))}"`);
  }
  return `[latchkey@${enterpriseId} ${params.join(' ')}]`;
}

/** `HEADER SP STRUCTURED-DATA SP MSG`: the MSG is the event's one-line summary, UTF-8 without a BOM. */
export function formatRfc5424(e: OutgoingEvent, o: MessageOrigin): string {
  return `${header(e, o)} ${structuredData(e, o.enterpriseId)} ${summaryOf(e)}`;
}
