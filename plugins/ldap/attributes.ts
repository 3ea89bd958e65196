import type { Entry } from 'ldapts';
import type { AccountRefusal } from '../../src/identity/plugin-kit.ts';

type Value = Entry[string];

/** Attribute values arrive as a string, a list, a Buffer or a list of Buffers; find one case-insensitively. */
export function values(entry: Entry, attr: string): Array<string | Buffer> {
  const key = Object.keys(entry).find((k) => k.toLowerCase() === attr.toLowerCase());
  if (!key) return [];
  const v: Value = entry[key]!;
  return (Array.isArray(v) ? v : [v]) as Array<string | Buffer>;
}

export const strings = (entry: Entry, attr: string): string[] =>
  values(entry, attr).map((v) => (Buffer.isBuffer(v) ? v.toString('utf8') : v));

export const first = (entry: Entry, attr: string): string | undefined => strings(entry, attr)[0];

/**
 * AD's objectGUID as Windows shows it: the first three groups are little-endian on the wire, so
 * `{01020304-0506-0708-…}` is stored as `04 03 02 01 06 05 08 07 …`.
 */
export function guidToString(bytes: Buffer): string {
  if (bytes.length !== 16) throw new Error(`objectGUID must be 16 bytes, got ${bytes.length}`);
  const hex = (from: number, to: number, reverse: boolean) => {
    const part = [...bytes.subarray(from, to)];
    return (reverse ? part.reverse() : part).map((b) => b.toString(16).padStart(2, '0')).join('');
  };
  return [hex(0, 4, true), hex(4, 6, true), hex(6, 8, true), hex(8, 10, false), hex(10, 16, false)].join('-');
}

/** Binary attributes that must be read as Buffers and shown as strings. */
export const isBinaryId = (attr: string): boolean => attr.toLowerCase() === 'objectguid';

/** The stable id of an entry under `idAttr`, as text. */
export function externalId(entry: Entry, idAttr: string): string | undefined {
  const v = values(entry, idAttr)[0];
  if (v === undefined) return undefined;
  if (isBinaryId(idAttr)) return guidToString(Buffer.isBuffer(v) ? v : Buffer.from(v, 'binary'));
  return Buffer.isBuffer(v) ? v.toString('utf8') : v;
}

/**
 * The value of a DN's first RDN, unescaped (RFC 4514): `cn=Eng\, Ops,ou=groups` → `Eng, Ops`.
 * Used to name groups known only by DN (`memberOf`).
 */
export function firstRdnValue(dn: string): string {
  let i = dn.indexOf('=') + 1;
  const bytes: number[] = [];
  for (; i < dn.length; i++) {
    const c = dn[i]!;
    if (c === ',' || c === '+') break;
    if (c === '\\' && i + 1 < dn.length) {
      const hex = dn.slice(i + 1, i + 3);
      if (/^[0-9a-f]{2}$/i.test(hex)) {
        bytes.push(parseInt(hex, 16));
        i += 2;
      } else {
        bytes.push(...Buffer.from(dn[++i]!, 'utf8'));
      }
      continue;
    }
    bytes.push(...Buffer.from(c, 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8').trim();
}

/** Text as a directory's value holds it: tabs and line breaks are text; other control characters say binary. */
const BINARY_TEXT = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/;

/**
 * One value of an `extraAttributes` attribute as the record keeps it (docs/identity-backends.md): text
 * as it is; a value that is not UTF-8 text (ldapts hands those over as Buffers) or holds control
 * characters, base64; `objectGUID` as its GUID text.
 */
function attributeText(attr: string, v: string | Buffer): string {
  if (isBinaryId(attr)) {
    const bytes = Buffer.isBuffer(v) ? v : Buffer.from(v, 'utf8');
    return bytes.length === 16 ? guidToString(bytes) : bytes.toString('base64');
  }
  if (Buffer.isBuffer(v)) return v.toString('base64');
  return BINARY_TEXT.test(v) ? Buffer.from(v, 'utf8').toString('base64') : v;
}

/**
 * The entry's `extraAttributes`, under the names the config gives (the directory's spelling may differ
 * in case): one value as a string, several as a list; an attribute the entry lacks is left out.
 */
export function extraAttributes(entry: Entry, names: readonly string[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name of names) {
    const list = values(entry, name).map((v) => attributeText(name, v));
    if (list.length > 0) out[name] = list.length === 1 ? list[0]! : list;
  }
  return out;
}

/** AD's userAccountControl flag for a disabled account. */
const ACCOUNTDISABLE = 0x2;

export function isDisabled(entry: Entry): boolean {
  const uac = Number(first(entry, 'userAccountControl'));
  return Number.isInteger(uac) && (uac & ACCOUNTDISABLE) !== 0;
}

/** Windows FILETIME (100 ns since 1601-01-01) of the Unix epoch. */
const FILETIME_EPOCH_OFFSET_MS = 11_644_473_600_000n;

/**
 * AD's `accountExpires` has passed. 0 and 0x7FFFFFFFFFFFFFFF mean never. A sign-in learns this from
 * the bind (data 701); the refresh grant, which binds nothing, reads it here.
 */
export function isExpired(entry: Entry, now: number): boolean {
  const raw = first(entry, 'accountExpires');
  if (!raw || !/^\d+$/.test(raw)) return false;
  const ticks = BigInt(raw);
  if (ticks === 0n || ticks >= 0x7fffffffffffffffn) return false;
  return ticks / 10_000n - FILETIME_EPOCH_OFFSET_MS <= BigInt(now);
}

/** When AD says the password expires (`msDS-UserPasswordExpiryTimeComputed`, FILETIME), ms since the epoch; undefined for never. */
export function passwordExpiry(entry: Entry): number | undefined {
  const raw = first(entry, 'msDS-UserPasswordExpiryTimeComputed');
  if (!raw || !/^\d+$/.test(raw)) return undefined;
  const ticks = BigInt(raw);
  if (ticks === 0n || ticks >= 0x7fffffffffffffffn) return undefined;
  return Number(ticks / 10_000n - FILETIME_EPOCH_OFFSET_MS);
}

/** AD's bind refusals (result 49, "…, data 533, …") that it sends only when the password was right. */
const REFUSALS = new Map<string, AccountRefusal>([
  ['533', 'disabled'],
  ['701', 'account_expired'],
  ['532', 'password_expired'],
  ['773', 'password_must_change'],
]);

/**
 * What an AD bind refusal says: a reason to tell the user, or `wrong` (52e bad password, 525 no such
 * user, anything unknown). 775 (locked) is `wrong` on purpose: AD sends it for a locked account
 * whatever the password, so telling it would confirm to a wrong guess that the account exists and is
 * locked, and nothing else in AD's answer says whether the password was right.
 */
export function adBindRefusal(message: string): AccountRefusal | 'wrong' {
  const code = adBindCode(message);
  return (code && REFUSALS.get(code)) || 'wrong';
}

/** AD's 775: the account is locked out. For the operator's log only, never for the user. */
export const isAdLockout = (message: string): boolean => adBindCode(message) === '775';

const adBindCode = (message: string) => /\bdata ([0-9a-f]{3,4})\b/i.exec(message)?.[1]?.toLowerCase();
