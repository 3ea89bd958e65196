import { readFileSync } from 'node:fs';

/** One key of a keytab: whose, which version, which encryption type. */
export interface KeytabEntry {
  /** `service/host@REALM`, as `klist -k` shows it. */
  principal: string;
  kvno: number;
  enctype: number;
}

/**
 * The keys a keytab file holds (MIT's format, which `ktpass`, `samba-tool domain exportkeytab` and
 * `ktutil` write: version 0x0502, or 0x0501 with the realm counted among the components). Read at
 * start, so a wrong path or a keytab without the service principal stops the server with a message
 * (docs/identity-backends.md "Desktop single sign-on") rather than failing every sign-in later. Throws
 * with a sentence when the file cannot be read or is no keytab.
 */
export function readKeytab(path: string): KeytabEntry[] {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (err) {
    throw new Error(`cannot read the keytab ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (data.length < 2 || data[0] !== 0x05 || (data[1] !== 0x01 && data[1] !== 0x02)) throw new Error(`${path} is not a keytab file`);
  const v1 = data[1] === 0x01;
  const entries: KeytabEntry[] = [];
  let at = 2;
  try {
    while (at + 4 <= data.length) {
      const size = data.readInt32BE(at);
      at += 4;
      // A negative size is a hole left by a deleted entry.
      if (size <= 0) {
        at += -size;
        continue;
      }
      const end = at + size;
      if (end > data.length) throw new Error('truncated');
      let p = at;
      const counted = () => {
        const length = data.readUInt16BE(p);
        const text = data.subarray(p + 2, p + 2 + length).toString('utf8');
        p += 2 + length;
        return text;
      };
      const count = data.readUInt16BE(p) - (v1 ? 1 : 0);
      p += 2;
      const realm = counted();
      const components = Array.from({ length: count }, counted);
      if (!v1) p += 4; // name type
      p += 4; // timestamp
      let kvno = data.readUInt8(p);
      p += 1;
      const enctype = data.readUInt16BE(p);
      p += 2;
      counted(); // the key itself
      // A 32-bit version number follows when the 8-bit one overflowed.
      if (end - p >= 4) kvno = data.readUInt32BE(p) || kvno;
      entries.push({ principal: `${components.join('/')}@${realm}`, kvno, enctype });
      at = end;
    }
  } catch {
    throw new Error(`${path} is not a readable keytab file (it ends inside an entry)`);
  }
  return entries;
}
