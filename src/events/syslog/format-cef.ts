import { isIPv4, isIPv6 } from 'node:net';
import { cefSeverity, severityOf, SEVERITY, summaryOf, titleOf } from './describe.ts';
import type { OutgoingEvent } from '../model.ts';
import { header, type MessageOrigin } from './format-rfc5424.ts';

/** CEF's header fields: `\` and `|` escaped; a line break would end the record, so it becomes a space. */
export const escapeHeader = (value: string): string => value.replace(/[\\|]/g, (c) => `\\${c}`).replace(/\r\n|[\r\n]/g, ' ');

/** CEF's extension values: `\` and `=` escaped, line breaks written as `\n` and `\r`. */
export const escapeExtension = (value: string): string =>
  value.replace(/[\\=]/g, (c) => `\\${c}`).replace(/\r\n|[\r\n]/g, (c) => (c === '\r' ? '\\r' : '\\n'));

/**
 * `CEF:0|Latchkey|Latchkey|<version>|<kind>|<title>|<severity>|<extension>`, with the event's fields
 * in CEF's own keys where one means the same (docs/audit-to-siem.md "CEF" lists them): `rt` the time,
 * `externalId` the event's id, `duid` the user acted on, `suid` the acting user, `src` (IPv4) or
 * `c6a2` (IPv6) the caller's address; the rest in labelled custom strings.
 */
export function cefLine(e: OutgoingEvent, o: MessageOrigin): string {
  const severity = severityOf(e.kind);
  const ext: Array<[string, string | null | undefined]> = [
    ['rt', String(e.at)],
    ['externalId', e.id],
    ['duid', e.userId],
    ['suid', e.actorUserId],
  ];
  if (e.ip && isIPv4(e.ip)) ext.push(['src', e.ip]);
  else if (e.ip && isIPv6(e.ip)) ext.push(['c6a2', e.ip], ['c6a2Label', 'Source IPv6 Address']);
  if (e.clientId) ext.push(['cs1', e.clientId], ['cs1Label', 'clientId']);
  if (e.actorClientId) ext.push(['cs2', e.actorClientId], ['cs2Label', 'actorClientId']);
  if (e.requestId) ext.push(['cs3', e.requestId], ['cs3Label', 'requestId']);
  if (e.details && Object.keys(e.details).length > 0) ext.push(['cs4', JSON.stringify(e.details)], ['cs4Label', 'details']);
  if (severity === SEVERITY.warning) ext.push(['outcome', 'failure']);
  ext.push(['dvchost', o.hostname], ['dvcpid', o.procId], ['msg', summaryOf(e)]);
  const extension = ext
    .filter((pair): pair is [string, string] => pair[1] != null && pair[1] !== '')
    .map(([key, value]) => `${key}=${escapeExtension(value)}`)
    .join(' ');
  const fields = ['Latchkey', 'Latchkey', o.version, e.kind, titleOf(e.kind)].map(escapeHeader);
  return `CEF:0|${fields.join('|')}|${cefSeverity(severity)}|${extension}`;
}

/**
 * The CEF line as the MSG of an RFC 5424 message (no structured data), so the receiver files it by
 * facility, host and time like any syslog message and hands the CEF to its parser.
 */
export function formatCef(e: OutgoingEvent, o: MessageOrigin): string {
  return `${header(e, o)} - ${cefLine(e, o)}`;
}
