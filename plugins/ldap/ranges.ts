import type { Entry } from 'ldapts';

const RANGED = /^(.+);range=(\d+)-(\d+|\*)$/i;

/** At most this many follow-up reads per attribute (1,500 values each on AD: 1.5 million values). */
const MAX_PAGES = 1000;

/** Values of one attribute that Active Directory sends at a time by default (its MaxValRange). */
const AD_RANGE = 1500;

/**
 * `attr` by its first range (`member;range=0-1499`), to ask an Active Directory DC for the values in
 * ranges from the first read. AD ranges a request by name too, but only past its MaxValRange, and
 * Samba's DCs never do: asked for a range, both answer with one (`member;range=0-1499`, or
 * `member;range=0-*` for the last), so every DC takes the same reads for a large group.
 */
export const firstRange = (attr: string): string => `${attr};range=0-${AD_RANGE - 1}`;

/**
 * Active Directory returns at most 1,500 values of a multi-valued attribute (MaxValRange) and names
 * the part it sent `member;range=0-1499`; the rest must be asked for as `member;range=1500-*` until the
 * server answers with a range ending in `*`. This completes every ranged attribute of `entry` in place,
 * under its plain name. `read` fetches the entry again with just the given attribute option. A sign-in
 * takes what it got when the ranges stop short (the entry deleted meanwhile); `whole` (directory
 * sync, which must never pass a part for the whole) throws instead.
 */
export async function completeRanges(
  entry: Entry,
  read: (attrWithRange: string) => Promise<Entry | undefined>,
  o: { whole?: boolean } = {},
): Promise<Entry> {
  for (const key of Object.keys(entry)) {
    const match = RANGED.exec(key);
    if (!match) continue;
    const attr = match[1]!;
    const all = toList(entry[key]!);
    let end = match[3]!;
    delete entry[key];
    for (let page = 0; end !== '*' && page < MAX_PAGES; page++) {
      const next = await read(`${attr};range=${Number(end) + 1}-*`);
      const nextKey = next && Object.keys(next).find((k) => RANGED.exec(k)?.[1]?.toLowerCase() === attr.toLowerCase());
      if (!next || !nextKey) break;
      all.push(...toList(next[nextKey]!));
      end = RANGED.exec(nextKey)![3]!;
    }
    if (o.whole && end !== '*') throw new Error(`the values of ${attr} of ${entry.dn} ended at ${all.length}, before their last range`);
    entry[attr] = all as string[];
  }
  return entry;
}

const toList = (v: Entry[string]): Array<string | Buffer> => (Array.isArray(v) ? [...v] : [v]);
