/**
 * What a Negotiate token is, read from its bytes before the GSSAPI library is asked: the library
 * (MIT krb5 through the `kerberos` binding) answers only "accepted" or an error, never which mechanism
 * the client used nor which service the ticket is for. So NTLM is recognised here (its `NTLMSSP\0`
 * signature, or SPNEGO offering NTLM first, OID 1.3.6.1.4.1.311.2.2.10), and a Kerberos AP-REQ gives the
 * ticket's realm and service principal, which travel in the clear (RFC 4120 5.3), so that a ticket for
 * another service or realm is refused by name (docs/identity-backends.md "Desktop single sign-on").
 */

export type TokenView =
  | { kind: 'ntlm' }
  /** A Kerberos AP-REQ (raw, or inside SPNEGO): the realm and service its ticket names. */
  | { kind: 'kerberos'; realm: string; service: string }
  /** Not a token this server can take: undecodable, truncated, or another mechanism. */
  | { kind: 'invalid' };

const NTLM_SIGNATURE = Buffer.from('NTLMSSP\0', 'latin1');
const OID = {
  spnego: '1.3.6.1.5.5.2',
  krb5: '1.2.840.113554.1.2.2',
  /** The Kerberos OID as Windows misencoded it once; Windows still offers it first. */
  msKrb5: '1.2.840.48018.1.2.2',
  ntlm: '1.3.6.1.4.1.311.2.2.10',
} as const;
/** RFC 1964 1.1.1: the inner token of an AP-REQ. */
const TOK_ID_AP_REQ = 0x0100;

interface Tlv {
  tag: number;
  /** The value's bytes: [start, end). */
  start: number;
  end: number;
}

class Malformed extends Error {}

/** One DER element at `at` (low tag numbers only, definite lengths up to four bytes). */
function element(b: Buffer, at: number, limit = b.length): Tlv {
  if (at + 2 > limit) throw new Malformed();
  const tag = b[at]!;
  let length = b[at + 1]!;
  let start = at + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4 || start + bytes > limit) throw new Malformed();
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + b[start + i]!;
    start += bytes;
  }
  const end = start + length;
  if (end > limit) throw new Malformed();
  return { tag, start, end };
}

/** The elements inside a constructed one. */
function children(b: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.start; at < parent.end; ) {
    const child = element(b, at, parent.end);
    out.push(child);
    at = child.end;
  }
  return out;
}

/** The one element inside a context tag (`[n] EXPLICIT`), checked to carry `tag`. */
function inside(b: Buffer, wrapper: Tlv | undefined, tag: number): Tlv {
  if (!wrapper) throw new Malformed();
  const value = element(b, wrapper.start, wrapper.end);
  if (value.tag !== tag) throw new Malformed();
  return value;
}

const field = (b: Buffer, sequence: Tlv, n: number): Tlv | undefined => children(b, sequence).find((c) => c.tag === (0xa0 | n));

function oidOf(b: Buffer, t: Tlv): string {
  if (t.tag !== 0x06 || t.end <= t.start) throw new Malformed();
  const first = b[t.start]!;
  const arcs = [Math.floor(first / 40), first % 40];
  let value = 0;
  for (let i = t.start + 1; i < t.end; i++) {
    value = value * 128 + (b[i]! & 0x7f);
    if (!(b[i]! & 0x80)) {
      arcs.push(value);
      value = 0;
    }
  }
  return arcs.join('.');
}

const isNtlm = (b: Buffer, at = 0) => b.length - at >= NTLM_SIGNATURE.length && b.subarray(at, at + 8).equals(NTLM_SIGNATURE);

/** A GeneralString (KerberosString), ASCII in practice. */
function text(b: Buffer, t: Tlv): string {
  if (t.tag !== 0x1b) throw new Malformed();
  return b.subarray(t.start, t.end).toString('latin1');
}

/** RFC 4120 5.5.1 AP-REQ: the ticket's realm and service principal name. */
function apReq(b: Buffer, at: number, limit: number): TokenView {
  const req = element(b, at, limit);
  if (req.tag !== 0x6e) throw new Malformed();
  const body = inside(b, req, 0x30);
  const ticket = inside(b, inside(b, field(b, body, 3), 0x61), 0x30);
  const realm = text(b, inside(b, field(b, ticket, 1), 0x1b));
  const sname = inside(b, field(b, ticket, 2), 0x30);
  const names = children(b, inside(b, field(b, sname, 1), 0x30)).map((n) => text(b, n));
  if (names.length === 0) throw new Malformed();
  return { kind: 'kerberos', realm, service: names.join('/') };
}

/** RFC 2743 3.1: `[APPLICATION 0] { mech OID, inner token }`. */
function initialContextToken(b: Buffer, limit = b.length, at = 0): TokenView {
  if (isNtlm(b, at)) return { kind: 'ntlm' };
  const outer = element(b, at, limit);
  if (outer.tag !== 0x60) throw new Malformed();
  const mech = element(b, outer.start, outer.end);
  const oid = oidOf(b, mech);
  if (oid === OID.krb5 || oid === OID.msKrb5) {
    if (mech.end + 2 > outer.end || b.readUInt16BE(mech.end) !== TOK_ID_AP_REQ) throw new Malformed();
    return apReq(b, mech.end + 2, outer.end);
  }
  if (oid !== OID.spnego) return { kind: 'invalid' };
  const negotiation = element(b, mech.end, outer.end);
  // RFC 4178 4.2.2: a NegTokenResp is a later leg; only NTLM's third message comes that way.
  if (negotiation.tag === 0xa1) {
    const response = field(b, inside(b, negotiation, 0x30), 2);
    const token = response && inside(b, response, 0x04);
    return token && isNtlm(b, token.start) ? { kind: 'ntlm' } : { kind: 'invalid' };
  }
  // RFC 4178 4.2.1: NegTokenInit { mechTypes [0], reqFlags [1], mechToken [2], mechListMIC [3] }.
  const init = inside(b, negotiation, 0x30);
  const offered = children(b, inside(b, field(b, init, 0), 0x30)).map((t) => oidOf(b, t));
  const mechToken = field(b, init, 2);
  if (!mechToken) return { kind: offered[0] === OID.ntlm ? 'ntlm' : 'invalid' };
  const token = inside(b, mechToken, 0x04);
  // The optimistic token is for the first mechanism offered.
  if (isNtlm(b, token.start) || offered[0] === OID.ntlm) return { kind: 'ntlm' };
  return initialContextToken(b, token.end, token.start);
}

/** What the base64 of an `Authorization: Negotiate` header holds. */
export function inspectToken(base64: string): TokenView {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return { kind: 'invalid' };
  const bytes = Buffer.from(base64, 'base64');
  try {
    return initialContextToken(bytes);
  } catch (err) {
    if (err instanceof Malformed || err instanceof RangeError) return { kind: 'invalid' };
    throw err;
  }
}
