import { dnValue } from '../fixtures/ldap/directory.ts';
import { AD_BASE_DN } from '../helpers/samba.ts';

/**
 * The test domain's content, loaded into the Samba DC before its first start: people in every state AD
 * refuses a bind for, groups nested the AD way, and a 1,601-member group (All Hands: 1,600 team groups
 * and bob). Gus is in 600 of the teams, more than one page of a group search, and in All Hands only
 * through them. The bulk lives in its own OU: Samba evaluates the in-chain rule group by group, so a
 * search over the 1,601 of them costs about half a second, which only the large-group test pays.
 */
export const PEOPLE = `OU=Latchkey People,${AD_BASE_DN}`;
export const GROUPS = `OU=Latchkey Groups,${AD_BASE_DN}`;
const TEAMS = `OU=Teams,${AD_BASE_DN}`;
export const SERVICE_DN = `CN=svc-latchkey,CN=Users,${AD_BASE_DN}`;
export const SERVICE_PASSWORD = 'Svc-Latchkey-Directory-1';
export const TEAM_COUNT = 1600;
export const GUS_TEAMS = 600;

export interface AdPerson {
  sam: string;
  cn: string;
  password: string;
  /** Attributes that put the account in the state under test. */
  state?: Record<string, string>;
}

const person = (sam: string, cn: string, state?: Record<string, string>): AdPerson => ({
  sam,
  cn,
  password: `${sam.slice(0, 4)}-Directory-Pw1`,
  state,
});

export const people = {
  alice: person('alice', 'Alice Liddell'),
  bob: person('bob', 'Bob Builder'),
  /** sAMAccountName allows `(`, `)`, `'`, `&` and non-ASCII; the CN carries the DN metacharacters. */
  special: { ...person("jörg.o'b(ops)&x", 'Jörg O\'Brien, Ops+Night #1 <x>; "y"'), password: 'Joerg-Directory-Pw1' },
  dora: person('dora', 'Dora Disabled', { userAccountControl: '514' }),
  eve: person('eve', 'Eve Expired', { accountExpires: '1' }),
  mike: person('mike', 'Mike Mustchange', { pwdLastSet: '0' }),
  lou: person('lou', 'Lou Locked'),
  ren: person('ren', 'Ren Renamed'),
  gus: person('gus', 'Gus Manygroups'),
} satisfies Record<string, AdPerson>;

export const personDn = (p: AdPerson) => `CN=${dnValue(p.cn)},${PEOPLE}`;
export const groupDn = (cn: string) => `CN=${dnValue(cn)},${GROUPS}`;
export const ALL_HANDS = 'All Hands';
export const ADMINS_DN = groupDn('Latchkey Admins');

/** Direct members; nesting: alice is an admin only through IT Ops, bob is staff only through Engineers. */
const groups: Record<string, string[]> = {
  'IT Ops': [personDn(people.alice)],
  'Latchkey Admins': [groupDn('IT Ops')],
  Engineers: [personDn(people.bob)],
  Staff: [groupDn('Engineers'), personDn(people.alice)],
  'Night, Ops (24*7)': [personDn(people.special)],
};

/** Lou's own password policy (a PSO): three wrong passwords lock the account for half an hour. */
const lockoutPolicy = {
  dn: `CN=Lock after three,CN=Password Settings Container,CN=System,${AD_BASE_DN}`,
  attrs: {
    objectClass: 'msDS-PasswordSettings',
    'msDS-PasswordSettingsPrecedence': '1',
    'msDS-PasswordReversibleEncryptionEnabled': 'FALSE',
    'msDS-PasswordHistoryLength': '0',
    'msDS-PasswordComplexityEnabled': 'TRUE',
    'msDS-MinimumPasswordLength': '7',
    'msDS-MinimumPasswordAge': '0',
    'msDS-MaximumPasswordAge': '-36288000000000',
    'msDS-LockoutThreshold': '3',
    'msDS-LockoutObservationWindow': '-18000000000',
    'msDS-LockoutDuration': '-18000000000',
    'msDS-PSOAppliesTo': personDn(people.lou),
  },
};
export const LOCKOUT_THRESHOLD = 3;

type Attrs = Record<string, string | string[]>;

/** One LDIF record; values that are not plain ASCII, and passwords (UTF-16LE in quotes), in base64. */
function record(dn: string, attrs: Attrs): string {
  const line = (name: string, value: string) =>
    /^[\x20-\x7e]*$/.test(value) && !/^[ :<]/.test(value)
      ? `${name}: ${value}`
      : `${name}:: ${Buffer.from(value, 'utf8').toString('base64')}`;
  const lines = [line('dn', dn)];
  for (const [name, value] of Object.entries(attrs)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      lines.push(name === 'unicodePwd' ? `unicodePwd:: ${Buffer.from(`"${v}"`, 'utf16le').toString('base64')}` : line(name, v));
    }
  }
  return `${lines.join('\n')}\n\n`;
}

export function domainLdif(): string {
  let out = '';
  for (const ou of [PEOPLE, GROUPS, TEAMS]) out += record(ou, { objectClass: 'organizationalUnit' });
  out += record(SERVICE_DN, {
    objectClass: 'user',
    sAMAccountName: 'svc-latchkey',
    unicodePwd: SERVICE_PASSWORD,
    userAccountControl: '66048',
  });
  for (const p of Object.values(people)) {
    out += record(personDn(p), {
      objectClass: 'user',
      sAMAccountName: p.sam,
      displayName: p.cn,
      mail: `${p.sam.replace(/[^a-z]/g, '')}@latchkey.test`,
      unicodePwd: p.password,
      userAccountControl: '512',
      ...p.state,
    });
  }
  // Parents after their members: AD checks that a member exists.
  for (const [cn, members] of Object.entries(groups)) out += record(groupDn(cn), { objectClass: 'group', member: members });
  const teams = Array.from({ length: TEAM_COUNT }, (_, i) => `CN=team${String(i + 1).padStart(4, '0')},${TEAMS}`);
  teams.forEach((team, i) => {
    out += record(team, { objectClass: 'group', ...(i < GUS_TEAMS ? { member: personDn(people.gus) } : {}) });
  });
  out += record(`CN=${ALL_HANDS},${TEAMS}`, { objectClass: 'group', member: [...teams, personDn(people.bob)] });
  out += record(lockoutPolicy.dn, lockoutPolicy.attrs);
  return out;
}
