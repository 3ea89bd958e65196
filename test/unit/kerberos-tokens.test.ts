import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { refusalOf } from '../../src/kerberos/acceptor.ts';
import { readKeytab } from '../../src/kerberos/keytab.ts';
import { inspectToken } from '../../src/kerberos/spnego.ts';

/**
 * The pure parts of desktop single sign-on (docs/identity-backends.md "Desktop single sign-on"): what a
 * Negotiate token is, read from its bytes; MIT's words mapped to the refusal reasons; the keytab read at
 * start. The live KDC's tokens are in test/ad/kerberos.ts.
 */

function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const length = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
}
const int = (n: number) => der(0x02, Buffer.from([n]));
const str = (s: string) => der(0x1b, Buffer.from(s, 'latin1'));
const oid = (hex: string) => der(0x06, Buffer.from(hex, 'hex'));
const OIDS = { spnego: '2b0601050502', krb5: '2a864886f712010202', msKrb5: '2a864882f712010202', ntlm: '2b06010401823702020a' };
const NTLMSSP = (type: number) => Buffer.concat([Buffer.from('NTLMSSP\0', 'latin1'), Buffer.from([type, 0, 0, 0]), Buffer.alloc(24)]);

/** RFC 4120 5.5.1: an AP-REQ whose ticket names `service` in `realm` (the encrypted parts are filler). */
function apReq(realm: string, ...service: string[]): Buffer {
  const encrypted = der(0x30, der(0xa0, int(18)), der(0xa2, der(0x04, Buffer.alloc(40, 7))));
  const ticket = der(
    0x61,
    der(
      0x30,
      der(0xa0, int(5)),
      der(0xa1, str(realm)),
      der(0xa2, der(0x30, der(0xa0, int(2)), der(0xa1, der(0x30, ...service.map(str))))),
      der(0xa3, encrypted),
    ),
  );
  return der(
    0x6e,
    der(
      0x30,
      der(0xa0, int(5)),
      der(0xa1, int(14)),
      der(0xa2, der(0x03, Buffer.from([0, 0x20, 0, 0, 0]))),
      der(0xa3, ticket),
      der(0xa4, encrypted),
    ),
  );
}
/** RFC 1964: the Kerberos mechanism's initial token, as requests-kerberos sends it. */
const krb5Token = (req: Buffer) => der(0x60, oid(OIDS.krb5), Buffer.from([1, 0]), req);
/** RFC 4178: SPNEGO's NegTokenInit offering `mechs`, with an optimistic token, as browsers send it. */
const spnego = (mechs: string[], token?: Buffer) =>
  der(
    0x60,
    oid(OIDS.spnego),
    der(0xa0, der(0x30, der(0xa0, der(0x30, ...mechs.map(oid))), ...(token ? [der(0xa2, der(0x04, token))] : []))),
  );
const b64 = (b: Buffer) => b.toString('base64');

describe('what a Negotiate token is', () => {
  it('a Kerberos AP-REQ, raw or inside SPNEGO (Windows offers its own OID first): the ticket names its service and realm', () => {
    const req = apReq('CORP.EXAMPLE.COM', 'HTTP', 'sso.corp.example.com');
    const expected = { kind: 'kerberos', realm: 'CORP.EXAMPLE.COM', service: 'HTTP/sso.corp.example.com' };
    expect(inspectToken(b64(krb5Token(req)))).toEqual(expected);
    expect(inspectToken(b64(spnego([OIDS.msKrb5, OIDS.krb5, OIDS.ntlm], krb5Token(req))))).toEqual(expected);
  });

  it('NTLM: its signature alone, SPNEGO offering it first or carrying its message, and its third message in a NegTokenResp', () => {
    expect(inspectToken(b64(NTLMSSP(1)))).toEqual({ kind: 'ntlm' });
    expect(inspectToken(b64(spnego([OIDS.ntlm], NTLMSSP(1))))).toEqual({ kind: 'ntlm' });
    expect(inspectToken(b64(spnego([OIDS.ntlm])))).toEqual({ kind: 'ntlm' });
    // Kerberos offered first, but the optimistic token is NTLM's.
    expect(inspectToken(b64(spnego([OIDS.krb5, OIDS.ntlm], NTLMSSP(1))))).toEqual({ kind: 'ntlm' });
    const resp = der(0x60, oid(OIDS.spnego), der(0xa1, der(0x30, der(0xa2, der(0x04, NTLMSSP(3))))));
    expect(inspectToken(b64(resp))).toEqual({ kind: 'ntlm' });
  });

  it('anything else is not a token this server takes: no optimistic token, another mechanism, truncated, not base64', () => {
    const whole = b64(spnego([OIDS.krb5], krb5Token(apReq('R', 'HTTP', 'h'))));
    expect(inspectToken(b64(spnego([OIDS.krb5])))).toEqual({ kind: 'invalid' });
    expect(inspectToken(b64(der(0x60, oid('2b0601050507'), Buffer.from([1, 0]))))).toEqual({ kind: 'invalid' });
    expect(inspectToken(whole.slice(0, 40))).toEqual({ kind: 'invalid' });
    expect(inspectToken('AAAA')).toEqual({ kind: 'invalid' });
    expect(inspectToken('not base64!')).toEqual({ kind: 'invalid' });
    expect(inspectToken(b64(krb5Token(der(0x6e, der(0x30)))))).toEqual({ kind: 'invalid' });
  });
});

describe("MIT's words, as the refusal reasons", () => {
  it.each([
    ['Unspecified GSS failure.  Minor code may provide more information: Request is a replay', 'replay'],
    ['Unspecified GSS failure.  Minor code may provide more information: Clock skew too great', 'clock_skew'],
    ['Unspecified GSS failure.  Minor code may provide more information: Ticket not yet valid', 'clock_skew'],
    ['Unspecified GSS failure.  Minor code may provide more information: Ticket expired', 'expired'],
    ['Request ticket server HTTP/x.example@EXAMPLE not found in keytab (ticket kvno 2)', 'wrong_service'],
    [
      'Unspecified GSS failure.  Minor code may provide more information: Key version number for principal in key table is incorrect',
      'wrong_service',
    ],
    [
      'Unspecified GSS failure.  Minor code may provide more information: Request ticket server HTTP/x@Y kvno 3 enctype aes256-cts found in keytab but cannot decrypt ticket',
      'wrong_service',
    ],
    ['An unsupported mechanism was requested: Unknown error', 'invalid_token'],
    ['Invalid token was supplied: Unknown error', 'invalid_token'],
  ])('%s → %s', (message, reason) => {
    expect(refusalOf(message)).toBe(reason);
  });
});

describe('the keytab read at start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-keytab-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const counted = (s: string) => Buffer.concat([Buffer.from([s.length >> 8, s.length & 0xff]), Buffer.from(s)]);

  /** MIT's format, version 0x0502: a size, then the entry (components, realm, name type, time, kvno, key). */
  function entry(realm: string, components: string[], kvno: number, enctype: number): Buffer {
    const body = Buffer.concat([
      Buffer.from([0, components.length]),
      counted(realm),
      ...components.map(counted),
      Buffer.from([0, 0, 0, 1]),
      Buffer.from([0x66, 0, 0, 0]),
      Buffer.from([kvno]),
      Buffer.from([0, enctype]),
      counted('k'.repeat(32)),
    ]);
    const size = Buffer.alloc(4);
    size.writeInt32BE(body.length);
    return Buffer.concat([size, body]);
  }

  it("lists each key's principal, version and encryption type; skips a deleted entry's hole", () => {
    const file = join(dir, 'http.keytab');
    const hole = Buffer.alloc(4);
    hole.writeInt32BE(-8);
    writeFileSync(
      file,
      Buffer.concat([
        Buffer.from([5, 2]),
        entry('CORP.EXAMPLE.COM', ['HTTP', 'sso.corp.example.com'], 3, 18),
        hole,
        Buffer.alloc(8),
        entry('CORP.EXAMPLE.COM', ['HTTP', 'sso.corp.example.com'], 3, 17),
      ]),
    );
    expect(readKeytab(file)).toEqual([
      { principal: 'HTTP/sso.corp.example.com@CORP.EXAMPLE.COM', kvno: 3, enctype: 18 },
      { principal: 'HTTP/sso.corp.example.com@CORP.EXAMPLE.COM', kvno: 3, enctype: 17 },
    ]);
  });

  it('a missing file, or one that is no keytab, is refused with a sentence', () => {
    expect(() => readKeytab(join(dir, 'missing.keytab'))).toThrow(/cannot read the keytab .*ENOENT/);
    const text = join(dir, 'text.keytab');
    writeFileSync(text, 'HTTP/sso@CORP\n');
    expect(() => readKeytab(text)).toThrow(/is not a keytab file/);
    const cut = join(dir, 'cut.keytab');
    writeFileSync(cut, Buffer.concat([Buffer.from([5, 2]), entry('R', ['HTTP', 'h'], 1, 18)]).subarray(0, 20));
    expect(() => readKeytab(cut)).toThrow(/not a readable keytab/);
  });
});
