import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { escapeExtension, escapeHeader } from '../../src/events/syslog/format-cef.ts';
import { escapeParamValue } from '../../src/events/syslog/format-rfc5424.ts';
import { severityOf } from '../../src/events/syslog/describe.ts';
import { frame, parseSyslogUrl } from '../../src/events/syslog/transport.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { basic, postForm } from '../helpers/http.ts';
import { startRsyslog, type Received, type Rsyslog } from '../helpers/rsyslog.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * docs/audit-to-siem.md: every audit event reaches Debian's rsyslog as one RFC 5424 message with its
 * fields in structured data, or as a CEF line over TLS; a receiver stopped and restarted mid-stream
 * gets every event, in order (a re-sent one may come twice, never out of turn).
 */

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** RFC 5424's SD-ELEMENT back into its id and parameters, the escapes of `"`, `\` and `]` undone. */
function parseStructuredData(sd: string): { id: string; params: Record<string, string> } {
  const m = /^\[(\S+)((?: [^=\s"\]]+="(?:\\.|[^"\\])*")*)\]$/.exec(sd);
  if (!m) throw new Error(`not one SD-ELEMENT: ${sd}`);
  const params: Record<string, string> = {};
  for (const p of m[2]!.matchAll(/ ([^=\s"\]]+)="((?:\\.|[^"\\])*)"/g)) params[p[1]!] = p[2]!.replace(/\\(["\\\]])/g, '$1');
  return { id: m[1]!, params };
}

/** A CEF line into its seven header fields and its extension, CEF's escapes undone. */
function parseCef(line: string): { header: string[]; ext: Record<string, string> } {
  const header: string[] = [];
  let field = '';
  let i = 0;
  for (; i < line.length && header.length < 7; i++) {
    const c = line[i]!;
    if (c === '\\') field += line[++i];
    else if (c === '|') {
      header.push(field);
      field = '';
    } else field += c;
  }
  const ext: Record<string, string> = {};
  for (const pair of line.slice(i).split(/ (?=[A-Za-z0-9_]+=)/)) {
    const eq = pair.indexOf('=');
    ext[pair.slice(0, eq)] = pair.slice(eq + 1).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c === 'r' ? '\r' : c));
  }
  return { header, ext };
}

const paramsOf = (r: Received) => parseStructuredData(r.structuredData).params;

/** The audit event the server recorded for a request id, as the database holds it. */
async function recorded(server: TestServer, requestId: string) {
  const row = (await server.sql('audit_events').where({ request_id: requestId }).first()) as Record<string, unknown>;
  return {
    id: String(row.id),
    at: Number(row.at),
    kind: String(row.kind),
    details: JSON.parse(String(row.details)) as Record<string, unknown>,
  };
}

/** A wrong password through the password grant: a `login.failure` event with this request id. */
const failedSignIn = (server: TestServer, requestId: string) =>
  postForm(
    `${server.url}/oauth/v20/token`,
    { grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: 'not-the-password' },
    { 'x-request-id': requestId },
  );

describe('the formats', () => {
  test('RFC 5424 escapes `"`, `\\` and `]` in a parameter value; CEF escapes its header and extension apart', () => {
    expect(escapeParamValue('a"b\\c]d')).toBe('a\\"b\\\\c\\]d');
    expect(escapeHeader('a|b\\c\nd')).toBe('a\\|b\\\\c d');
    expect(escapeExtension('a=b\\c\nd|e')).toBe('a\\=b\\\\c\\nd|e');
  });

  test('failures are warnings; changes to accounts are notices; the rest is information', () => {
    expect(severityOf('login.failure')).toBe(4);
    expect(severityOf('access.denied')).toBe(4);
    expect(severityOf('token.reuse_detected')).toBe(4);
    expect(severityOf('consent.denied')).toBe(6);
    expect(severityOf('admin.change')).toBe(5);
    expect(severityOf('mfa.totp_enrolled')).toBe(5);
    expect(severityOf('login.success')).toBe(6);
    expect(severityOf('token.issued')).toBe(6);
  });

  test('octet counting counts bytes; the URL names the transport, with the usual ports by default', () => {
    expect(frame('é')).toBe('2 é');
    expect(parseSyslogUrl('tcp://siem.example.com')).toEqual({ protocol: 'tcp', host: 'siem.example.com', port: 514 });
    expect(parseSyslogUrl('tls://[fd00::1]')).toEqual({ protocol: 'tls', host: 'fd00::1', port: 6514 });
    expect(parseSyslogUrl('udp://siem:514')).toBeUndefined();
  });
});

describe.each(databaseKinds)('audit events to rsyslog on %s', (kind) => {
  describe('RFC 5424 over TCP', () => {
    let rsyslog: Rsyslog;
    let server: TestServer;
    let client: { clientId: string; clientSecret: string | null };

    beforeAll(async () => {
      rsyslog = await startRsyslog();
      server = await startTestServer(kind, { audit: { everyToken: true, syslog: { url: rsyslog.url, facility: 'local4' } } });
      client = await server.client({ name: 'batch job', redirectUris: [], grantTypes: ['client_credentials'] });
    });
    afterAll(async () => {
      await server?.stop();
      await rsyslog?.destroy();
    });

    const arrived = (requestId: string) => rsyslog.received().filter((r) => paramsOf(r).requestId === requestId);

    test('an event arrives parsed: header, structured data with every field, and the summary', async () => {
      expect((await failedSignIn(server, 'rfc-failure')).status).toBe(400);
      await eventually('the failed sign-in reaches rsyslog', async () => arrived('rfc-failure').length > 0);
      const event = await recorded(server, 'rfc-failure');
      const [got] = arrived('rfc-failure');
      // local4 (20) and warning (4).
      expect(got).toMatchObject({
        pri: 20 * 8 + 4,
        timestamp: new Date(event.at).toISOString(),
        hostname: hostname(),
        appName: 'latchkey',
        procId: String(process.pid),
        msgId: 'login.failure',
      });
      const sd = parseStructuredData(got!.structuredData);
      expect(sd.id).toBe('latchkey@32473');
      expect(sd.params).toMatchObject({
        kind: 'login.failure',
        eventId: event.id,
        clientId: 'admin-cli',
        ip: '127.0.0.1',
        requestId: 'rfc-failure',
      });
      expect(sd.params.reason).toBe(String(event.details.reason));
      expect(got!.msg).toBe('Sign-in failed: client admin-cli, from 127.0.0.1');
    });

    test('a token issued is information, with its client and details', async () => {
      const res = await postForm(
        `${server.url}/oauth/v20/token`,
        { grant_type: 'client_credentials' },
        { authorization: basic(client.clientId, client.clientSecret!), 'x-request-id': 'rfc-token' },
      );
      expect(res.status).toBe(200);
      await eventually('the token event reaches rsyslog', async () => arrived('rfc-token').length > 0);
      const event = await recorded(server, 'rfc-token');
      const [got] = arrived('rfc-token');
      expect(got!.pri).toBe(20 * 8 + 6);
      expect(got!.msgId).toBe('token.issued');
      const params = paramsOf(got!);
      expect(params).toMatchObject({ kind: 'token.issued', eventId: event.id, clientId: client.clientId });
      for (const [key, value] of Object.entries(event.details)) {
        expect(params[key]).toBe(typeof value === 'string' ? value : JSON.stringify(value));
      }
    });

    test('quotes, backslashes and brackets survive the structured data; a detail named like a field keeps both', async () => {
      const awkward = 'say "hi" \\ then ] and é';
      await server.ctx.audit.record({
        kind: 'admin.change',
        userId: 'u]1',
        requestId: 'rfc-escapes',
        details: { action: 'user.update', note: awkward, kind: 'shadow', nested: { a: [1, '"'] } },
      });
      await eventually('the event reaches rsyslog', async () => arrived('rfc-escapes').length > 0);
      const [got] = arrived('rfc-escapes');
      expect(got!.pri).toBe(20 * 8 + 5);
      expect(paramsOf(got!)).toMatchObject({
        kind: 'admin.change',
        userId: 'u]1',
        note: awkward,
        'detail.kind': 'shadow',
        nested: JSON.stringify({ a: [1, '"'] }),
      });
    });

    test('a clean stop confirms at once what the receiver read: a restart sends nothing twice', async () => {
      expect((await failedSignIn(server, 'rfc-before-stop')).status).toBe(400);
      await eventually('the event reaches rsyslog', async () => arrived('rfc-before-stop').length > 0);
      const event = await recorded(server, 'rfc-before-stop');
      // Long before `confirmAfter` has passed: the receiver's answer to the half-close is the proof.
      await server.ctx.syslog.stop();
      expect((await server.ctx.events.state('syslog'))?.position.id).toBe(event.id);
      await server.ctx.syslog.start();
      expect((await failedSignIn(server, 'rfc-after-stop')).status).toBe(400);
      await eventually('the next event reaches rsyslog', async () => arrived('rfc-after-stop').length > 0);
      expect(arrived('rfc-before-stop')).toHaveLength(1);
    });
  });

  describe('CEF over TLS', () => {
    let rsyslog: Rsyslog;
    let server: TestServer;

    beforeAll(async () => {
      rsyslog = await startRsyslog({ tls: true });
      const { ca, cert, key } = rsyslog.files;
      server = await startTestServer(kind, { audit: { syslog: { url: rsyslog.url, format: 'cef', tls: { ca, cert, key } } } });
    });
    afterAll(async () => {
      await server?.stop();
      await rsyslog?.destroy();
    });

    test('an event arrives as one CEF line, with a client certificate the receiver checked', async () => {
      expect((await failedSignIn(server, 'cef-failure')).status).toBe(400);
      const arrived = () => rsyslog.received().filter((r) => r.msg.includes('cs3=cef-failure '));
      await eventually('the failed sign-in reaches rsyslog over TLS', async () => arrived().length > 0);
      const event = await recorded(server, 'cef-failure');
      const [got] = arrived();
      // authpriv (10), the default, and warning (4); no structured data, the CEF line is the message.
      expect(got).toMatchObject({ pri: 10 * 8 + 4, appName: 'latchkey', msgId: 'login.failure', structuredData: '-' });
      const cef = parseCef(got!.msg);
      expect(cef.header).toEqual(['CEF:0', 'Latchkey', 'Latchkey', VERSION, 'login.failure', 'Sign-in failed', '6']);
      expect(cef.ext).toMatchObject({
        rt: String(event.at),
        externalId: event.id,
        src: '127.0.0.1',
        cs1: 'admin-cli',
        cs1Label: 'clientId',
        cs3: 'cef-failure',
        cs3Label: 'requestId',
        cs4: JSON.stringify(event.details),
        cs4Label: 'details',
        outcome: 'failure',
        dvchost: hostname(),
        msg: 'Sign-in failed: client admin-cli, from 127.0.0.1',
      });
    });

    test('a receiver whose certificate another CA signed gets nothing, and the sink says it is failing', async () => {
      const other = await startRsyslog({ tls: true });
      const stranger = await startTestServer(kind, {
        audit: { syslog: { url: other.url, format: 'cef', tls: { ca: rsyslog.files.ca, cert: other.files.cert, key: other.files.key } } },
      });
      try {
        expect((await failedSignIn(stranger, 'cef-stranger')).status).toBe(400);
        await eventually('the sink records its failure', async () => (await stranger.ctx.events.state('syslog'))?.failingSince != null);
        expect(stranger.logs.join('\n')).toContain('syslog receiver unreachable');
        expect(other.received()).toEqual([]);
      } finally {
        await stranger.stop();
        await other.destroy();
      }
    });
  });

  describe('a receiver stopped and restarted mid-stream', () => {
    let rsyslog: Rsyslog;
    let server: TestServer;
    let client: { clientId: string; clientSecret: string | null };

    beforeAll(async () => {
      rsyslog = await startRsyslog();
      server = await startTestServer(kind, { audit: { everyToken: true, syslog: { url: rsyslog.url } } });
      client = await server.client({ name: 'batch job', redirectUris: [], grantTypes: ['client_credentials'] });
    });
    afterAll(async () => {
      await server?.stop();
      await rsyslog?.destroy();
    });

    /** Makes events `<prefix>-<n>` (a token each), one after another as a busy server records them, up to `upTo`. */
    const producer = (prefix: string) => {
      let made = 0;
      return async (upTo: number) => {
        for (; made < upTo; ) {
          const n = ++made;
          const res = await postForm(
            `${server.url}/oauth/v20/token`,
            { grant_type: 'client_credentials' },
            { authorization: basic(client.clientId, client.clientSecret!), 'x-request-id': `${prefix}-${n}` },
          );
          expect(res.status).toBe(200);
        }
      };
    };

    /** The numbers of the `<prefix>-` events in the order rsyslog wrote them, repeats included. */
    const seen = (prefix: string) =>
      rsyslog
        .received()
        .map((r) => new RegExp(`^${prefix}-(\\d+)$`).exec(paramsOf(r).requestId ?? '')?.[1])
        .filter((n): n is string => n !== undefined)
        .map(Number);

    /** All of 1…n arrived, each first seen in turn: a line is a repeat or the next one, never ahead. */
    async function allInOrder(prefix: string, n: number): Promise<number> {
      await eventually(`all ${n} events arrive`, async () => new Set(seen(prefix)).size === n, { withinMs: 60_000 });
      const lines = seen(prefix);
      let highest = 0;
      for (const line of lines) {
        expect(line).toBeLessThanOrEqual(highest + 1);
        highest = Math.max(highest, line);
      }
      expect([...new Set(lines)]).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      // Caught up: the cursor passes the last event once it stayed on an open connection.
      const last = await recorded(server, `${prefix}-${n}`);
      await eventually('the cursor reaches the last event', async () => (await server.ctx.events.state('syslog'))?.position.id === last.id);
      return lines.length - n;
    }

    test('stopped while events flow: every event arrives, in order (one re-sent may come twice)', async () => {
      const produce = producer('mid');
      await produce(40);
      await eventually('the first events arrive', async () => seen('mid').length >= 20);
      // Stopped while events flow: some are written to a connection about to close.
      const flowing = produce(80);
      await rsyslog.stop();
      await flowing;
      await produce(100);
      await rsyslog.start();
      await produce(150);
      await allInOrder('mid', 150);
      expect(server.logs.join('\n')).toContain('syslog connection lost');
    });

    test('a receiver that hangs, then is killed: what it had taken in but not read is sent again', async () => {
      const produce = producer('hung');
      await produce(10);
      await eventually('the first events arrive', async () => seen('hung').length >= 10);
      rsyslog.pause();
      await produce(30);
      // Written, and held by the kernel for a receiver that no longer reads: TCP has accepted them.
      await eventually('the hung receiver holds unread messages', async () => rsyslog.unread() > 0);
      await rsyslog.crash();
      await rsyslog.start();
      await produce(40);
      await allInOrder('hung', 40);
    });
  });
});
