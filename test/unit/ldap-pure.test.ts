import { describe, expect, test } from '@jest/globals';
import { AndFilter, EqualityFilter, ExtensibleFilter, FilterParser, type Entry } from 'ldapts';
import { adBindRefusal, firstRdnValue, guidToString, isDisabled, isExpired } from '../../plugins/ldap/attributes.ts';
import { escapeFilterValue, fillFilter, IN_CHAIN, memberFilter, memberInChainFilter } from '../../plugins/ldap/filter.ts';
import { completeRanges, firstRange } from '../../plugins/ldap/ranges.ts';
import { DOWN_FOR_MS, ServerList } from '../../plugins/ldap/servers.ts';

describe('RFC 4515 filter escaping', () => {
  test('the five special characters become \\XX; everything else is kept', () => {
    expect(escapeFilterValue('*)(uid=*')).toBe('\\2a\\29\\28uid=\\2a');
    expect(escapeFilterValue('a\\b\0c')).toBe('a\\5cb\\00c');
    expect(escapeFilterValue("jörg o'brien")).toBe("jörg o'brien");
  });

  test('a filled template parses to one equality on the whole typed value', () => {
    const filter = fillFilter('(&(objectClass=person)(uid={username}))', { username: 'alice)(|(uid=*' });
    const parsed = FilterParser.parseString(filter) as AndFilter;
    expect(parsed).toBeInstanceOf(AndFilter);
    expect(parsed.filters).toHaveLength(2);
    const uid = parsed.filters[1] as EqualityFilter;
    expect(uid).toBeInstanceOf(EqualityFilter);
    expect([uid.attribute, uid.value]).toEqual(['uid', 'alice)(|(uid=*']);
  });

  test('the AD in-chain membership filter is an extensible match on the whole DN, escapes included', () => {
    const dn = 'CN=Ops\\, Night (24*7),DC=corp';
    const parsed = FilterParser.parseString(memberInChainFilter('member', dn)) as ExtensibleFilter;
    expect(parsed).toBeInstanceOf(ExtensibleFilter);
    expect([parsed.matchType, parsed.rule, parsed.value, parsed.dnAttributes]).toEqual(['member', IN_CHAIN, dn, false]);
  });

  test('the direct membership filter is one equality on the whole DN', () => {
    const dn = 'uid=d\\,o\\+e (x)*,ou=people,dc=example,dc=org';
    const parsed = FilterParser.parseString(memberFilter('uniqueMember', dn)) as EqualityFilter;
    expect(parsed).toBeInstanceOf(EqualityFilter);
    expect([parsed.attribute, parsed.value]).toEqual(['uniqueMember', dn]);
  });
});

describe('Active Directory values', () => {
  test('objectGUID bytes read as Windows shows them (first three groups little-endian)', () => {
    const bytes = Buffer.from('0403020106050807090a0b0c0d0e0f10', 'hex');
    expect(guidToString(bytes)).toBe('01020304-0506-0708-090a-0b0c0d0e0f10');
    expect(() => guidToString(Buffer.alloc(3))).toThrow('16 bytes');
  });

  test('userAccountControl: bit 2 is a disabled account', () => {
    expect(isDisabled({ dn: 'x', userAccountControl: '514' })).toBe(true);
    expect(isDisabled({ dn: 'x', userAccountControl: '512' })).toBe(false);
    expect(isDisabled({ dn: 'x' })).toBe(false);
  });

  test('bind refusals: each sub-code sent only for a right password has its reason; 52e, and 775 (sent for any password), read as wrong', () => {
    const msg = (code: string) => `80090308: LdapErr: DSID-0C09042A, comment: AcceptSecurityContext error, data ${code}, v3839`;
    expect(adBindRefusal(msg('52e'))).toBe('wrong');
    expect(adBindRefusal(msg('525'))).toBe('wrong');
    expect(adBindRefusal(msg('775'))).toBe('wrong');
    expect(['533', '701', '532', '773'].map((code) => adBindRefusal(msg(code)))).toEqual([
      'disabled',
      'account_expired',
      'password_expired',
      'password_must_change',
    ]);
    expect(adBindRefusal('Invalid credentials')).toBe('wrong');
  });

  test('group names from DNs, with RFC 4514 escapes undone', () => {
    expect(firstRdnValue('cn=Ops\\, Night (24*7),ou=groups,dc=example,dc=org')).toBe('Ops, Night (24*7)');
    expect(firstRdnValue('CN=J\\C3\\B6rg,OU=x')).toBe('Jörg');
    expect(firstRdnValue('cn=plain')).toBe('plain');
  });
});

describe('ranged attribute retrieval (member;range=)', () => {
  test('follows ranges until the server says `*`, keeping every value in order', async () => {
    const values = Array.from({ length: 3200 }, (_, i) => `cn=m${i},dc=corp`);
    const page = (low: number): Entry => {
      const high = Math.min(low + 1499, values.length - 1);
      const last = high === values.length - 1;
      return { dn: 'cn=big', [`member;range=${low}-${last ? '*' : high}`]: values.slice(low, high + 1) };
    };
    const asked: string[] = [];
    const entry = await completeRanges(page(0), async (attr) => {
      asked.push(attr);
      return page(Number(/range=(\d+)-/.exec(attr)![1]));
    });
    expect(asked).toEqual(['member;range=1500-*', 'member;range=3000-*']);
    expect(entry.member).toEqual(values);
    expect(Object.keys(entry).sort()).toEqual(['dn', 'member']);
  });

  test('an entry without ranges is left alone', async () => {
    const entry = { dn: 'cn=small', member: ['a', 'b'] };
    expect(await completeRanges({ ...entry }, async () => undefined)).toEqual(entry);
  });

  test('ranges that stop short: a sign-in takes the part; `whole` (directory sync) throws rather than pass a part for the whole', async () => {
    const firstPart = (): Entry => ({ dn: 'cn=big', 'member;range=0-1499': Array.from({ length: 1500 }, (_, i) => `cn=m${i}`) });
    // The entry gone before the next range (no answer), or answering without the attribute.
    const gone = async () => undefined;
    const withoutIt = async (): Promise<Entry> => ({ dn: 'cn=big' });
    // A middle range, then nothing: the end is never `*`.
    const oneMoreThenGone = async (attr: string): Promise<Entry | undefined> =>
      attr === 'member;range=1500-*' ? { dn: 'cn=big', 'member;range=1500-2999': ['cn=m1500'] } : undefined;

    expect((await completeRanges(firstPart(), gone)).member).toHaveLength(1500);
    for (const read of [gone, withoutIt])
      await expect(completeRanges(firstPart(), read, { whole: true })).rejects.toThrow(
        'the values of member of cn=big ended at 1500, before their last range',
      );
    await expect(completeRanges(firstPart(), oneMoreThenGone, { whole: true })).rejects.toThrow('ended at 1501, before their last range');
  });

  test('`whole` with every range there: the same values as without it; a first range that is also the last needs no read', async () => {
    const entry: Entry = { dn: 'cn=small', 'member;range=0-*': ['a', 'b'] };
    expect(await completeRanges(entry, async () => Promise.reject(new Error('no read expected')), { whole: true })).toEqual({
      dn: 'cn=small',
      member: ['a', 'b'],
    });
  });

  test("Active Directory's members are asked for by their first range of 1,500", () => {
    expect(firstRange('member')).toBe('member;range=0-1499');
  });
});

describe('server list', () => {
  test('a failed server goes last until its time is up; all failed: the one that failed longest ago first', () => {
    const list = new ServerList(['ldap://a', 'ldap://b', 'ldap://c']);
    list.markDown('ldap://a', 1000);
    expect(list.candidates(1001)).toEqual(['ldap://b', 'ldap://c', 'ldap://a']);
    expect(list.avoid('ldap://a', 1001)).toBe(true);
    list.markDown('ldap://b', 1002);
    list.markDown('ldap://c', 1003);
    expect(list.candidates(1004)).toEqual(['ldap://a', 'ldap://b', 'ldap://c']);
    expect(list.avoid('ldap://a', 1004)).toBe(false);
    expect(list.candidates(1000 + DOWN_FOR_MS + 1)[0]).toBe('ldap://a');
  });
});

describe("AD's accountExpires", () => {
  const entry = (value?: string) => ({ dn: 'cn=x', ...(value === undefined ? {} : { accountExpires: value }) }) as unknown as Entry;
  const filetime = (ms: number) => ((BigInt(ms) + 11_644_473_600_000n) * 10_000n).toString();
  test('0, never (0x7FFFFFFFFFFFFFFF) and a missing attribute do not expire; a past time does, a future one not yet', () => {
    const now = Date.UTC(2026, 10, 22);
    expect(isExpired(entry(), now)).toBe(false);
    expect(isExpired(entry('0'), now)).toBe(false);
    expect(isExpired(entry('9223372036854775807'), now)).toBe(false);
    expect(isExpired(entry(filetime(now - 1000)), now)).toBe(true);
    expect(isExpired(entry(filetime(now + 60_000)), now)).toBe(false);
  });
});
