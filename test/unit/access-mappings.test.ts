import { describe, expect, it } from '@jest/globals';
import { compiledFilter, groupValues, MAX_FILTERED_GROUP_NAME } from '../../src/access/mappings.ts';
import { type ClaimMapping, EVERYONE } from '../../src/access/model.ts';
import { type ReleasedUser, userClaims } from '../../src/access/release.ts';
import {
  type ClaimMappingInput,
  checkAccess,
  checkAttributeMappings,
  checkClaimMappings,
  checkRolesAttribute,
} from '../../src/access/validate.ts';
import { InputError } from '../../src/errors/service.ts';

/**
 * docs/access-and-claims.md "Claim mappings" and "SAML attributes": the rules of mappings alone, with
 * no server: what a group filter and its template give, and what a save refuses.
 */

/** The refusal a call threw, as `[field, message]`. */
function refusal(call: () => unknown): [string, string] {
  try {
    call();
  } catch (err) {
    if (err instanceof InputError) return [err.field, err.message];
    throw err;
  }
  throw new Error('no refusal');
}

const claims = (...list: ClaimMappingInput[]) => checkClaimMappings('claimMappings', list);
const groups = (groupFilter: string, value?: string): ClaimMappingInput => ({ claim: 'teams', source: 'groups', groupFilter, value });

describe('group filters: refused at the save when they could take exponential time', () => {
  it.each(['^(a+)+$', '^(\\w+\\s?)*$', '(x+x+)+y', '^(?:a|aa)+(b+)+$'])('%s is refused at its field', (filter) => {
    const [field, message] = refusal(() => claims(groups(filter)));
    expect(field).toBe('claimMappings.0.groupFilter');
    expect(message).toMatch(/could take exponential time/);
  });

  it('in attribute mappings too', () => {
    const [field, message] = refusal(() =>
      checkAttributeMappings('attributeMappings', [{ name: 'memberOf', source: 'groups', groupFilter: '(a|b+)+c' }]),
    );
    expect(field).toBe('attributeMappings.0.groupFilter');
    expect(message).toMatch(/could take exponential time/);
  });

  it.each(['^team-(.+)$', '^aws-(\\d{12})-(\\w+)$', '^cn=([^,]+),ou=groups', '^(?<team>\\w+)-eng$'])('%s is kept', (filter) => {
    expect(claims(groups(filter))[0]!.groupFilter).toBe(filter);
  });

  it('one that does not compile is still refused as no regular expression', () => {
    expect(refusal(() => claims(groups('^(unclosed')))).toEqual([
      'claimMappings.0.groupFilter',
      expect.stringMatching(/regular expression/),
    ]);
  });
});

describe('groupValues: names matched and rewritten', () => {
  it('leaves out a group name longer than 512 characters, before the filter sees it', () => {
    const longest = `team-${'x'.repeat(MAX_FILTERED_GROUP_NAME - 5)}`;
    expect(longest.length).toBe(512);
    expect(groupValues([longest, `${longest}y`, 'team-a'], '^team-(.+)$', null)).toEqual([longest.slice(5), 'a']);
  });

  it('compiles a filter once, and keeps only the most recently used 256', () => {
    const first = compiledFilter('^keep-(\\w+)$');
    expect(first.captures).toBe(1);
    expect(compiledFilter('^keep-(\\w+)$')).toBe(first);
    const old = compiledFilter('^old-(\\w+)$');
    for (let i = 0; i < 255; i++) {
      compiledFilter(`^filler-${i}-(\\w+)$`);
      compiledFilter('^keep-(\\w+)$'); // in use: stays
    }
    expect(compiledFilter('^keep-(\\w+)$')).toBe(first);
    expect(compiledFilter('^old-(\\w+)$')).not.toBe(old);
    expect(groupValues(['keep-a'], '^keep-(\\w+)$', null)).toEqual(['a']);
  });

  it('counts captures: the default template is $1 with a group, the whole name without', () => {
    expect(compiledFilter('^(a)(b)(?:c)(?<d>d)$').captures).toBe(3);
    expect(groupValues(['team-a', 'staff'], '^team-', null)).toEqual(['team-a']);
    expect(groupValues(['team-a', 'staff'], '^team-', '$&')).toEqual(['team-']);
    expect(groupValues(['team-a', 'staff'], '^team-(\\w+)$', null)).toEqual(['a']);
  });

  it('reads $10 with fewer than 10 groups as $1 followed by 0, as String.prototype.replace does', () => {
    const filter = '^team-(\\w+)$';
    expect(groupValues(['team-a'], filter, '$10')).toEqual(['team-a'.replace(new RegExp(filter), '$10')]);
    expect(groupValues(['team-a'], filter, '$10')).toEqual(['a0']);
    expect(groupValues(['team-a'], filter, '$01-$&')).toEqual(['a-team-a']);
  });

  it('reads $10 as the tenth group when there is one', () => {
    const filter = '^(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)$';
    expect(groupValues(['abcdefghij'], filter, '$10$1')).toEqual(['ja']);
    expect(groupValues(['abcdefghij'], filter, '$11')).toEqual(['a1']);
  });

  it("gives '' for a group that took no part in the match, and leaves out a value that ends up empty", () => {
    const filter = '^(?:eng-(\\w+)|(\\w+)-ops)$';
    expect(groupValues(['eng-web', 'db-ops'], filter, '$1')).toEqual(['web']);
    expect(groupValues(['eng-web', 'db-ops'], filter, '$2')).toEqual(['db']);
    expect(groupValues(['eng-web', 'db-ops'], filter, '$1$2')).toEqual(['web', 'db']);
    expect(groupValues(['eng-web', 'db-ops'], filter, 'team:$1')).toEqual(['team:web', 'team:']);
  });
});

describe('templates: refused at the save when they name a group the filter lacks', () => {
  it.each([
    ['^team-(\\w+)$', '$2', /\$2 but the group filter has one capture group/],
    ['^team-', '$1', /\$1 but the group filter has no capture group/],
    ['^team-', '$10', /\$1 but/],
    ['^(a)-(b)$', 'x:$1:$3', /\$3 but the group filter has 2 capture groups/],
  ])('filter %s with template %s', (filter, value, words) => {
    const [field, message] = refusal(() => claims(groups(filter, value)));
    expect(field).toBe('claimMappings.0.value');
    expect(message).toMatch(words);
  });

  it.each([
    ['^team-(\\w+)$', '$10'],
    ['^team-(\\w+)$', '$01:$&'],
    ['^team-', '$&'],
    ['^team-', 'price $0'],
  ])('filter %s with template %s is kept', (filter, value) => {
    expect(claims(groups(filter, value))[0]!.value).toBe(value);
  });
});

describe('claim names', () => {
  it.each(['nbf', 'typ', 'act', 'may_act', 'c_hash', 's_hash', 'token_type', 'active', 'events', 'email_verified', 'sub'])(
    '%s is reserved',
    (claim) => {
      expect(refusal(() => claims({ claim, source: 'static', value: 'x' }))).toEqual([
        'claimMappings.0.claim',
        expect.stringMatching(/reserved/),
      ]);
    },
  );

  it.each(['two words', 'tab\there', 'line\n', 'nbsp\u00a0', 'zero\u200bwidth', 'c1\u0085', '', 'x'.repeat(129)])(
    '%j is refused',
    (claim) => {
      expect(refusal(() => claims({ claim, source: 'username' }))).toEqual(['claimMappings.0.claim', expect.stringMatching(/printable/)]);
    },
  );

  it.each(['department', 'https://example.com/claims/team', 'équipe', 'x'.repeat(128)])('%s is kept', (claim) => {
    expect(claims({ claim, source: 'username' })[0]!.claim).toBe(claim);
  });
});

describe('overlapping claim mappings', () => {
  it('refuses an unscoped and a scoped mapping of one claim for one target, in either order', () => {
    expect(refusal(() => claims({ claim: 'x', source: 'username' }, { claim: 'x', source: 'email', scope: 'email' }))).toEqual([
      'claimMappings.1.scope',
      expect.stringMatching(/both with and without a scope/),
    ]);
    expect(
      refusal(() => claims({ claim: 'x', source: 'email', scope: 'email', targets: ['userinfo'] }, { claim: 'x', source: 'username' })),
    ).toEqual(['claimMappings.1.scope', expect.stringMatching(/for userinfo both with and without a scope/)]);
  });

  it('refuses exact duplicates, as before', () => {
    expect(refusal(() => claims({ claim: 'x', source: 'username' }, { claim: 'x', source: 'email' }))).toEqual([
      'claimMappings.1.claim',
      expect.stringMatching(/twice/),
    ]);
  });

  it('keeps one claim for different targets, or with different scopes', () => {
    expect(
      claims(
        { claim: 'x', source: 'username', targets: ['id_token'] },
        { claim: 'x', source: 'email', scope: 'email', targets: ['userinfo'] },
        { claim: 'y', source: 'username', scope: 'profile' },
        { claim: 'y', source: 'email', scope: 'email' },
      ),
    ).toHaveLength(4);
  });
});

describe('checkAccess', () => {
  it('gives the EVERYONE constant for mode everyone, whatever lists come with it', () => {
    expect(checkAccess('access', { mode: 'everyone', groups: ['staff'], users: ['u-1'], backends: ['corp'] })).toBe(EVERYONE);
    expect(checkAccess('access', { mode: 'everyone' })).toBe(EVERYONE);
    expect(checkAccess('access', null)).toBe(EVERYONE);
  });

  it('keeps the lists of an assigned policy', () => {
    expect(checkAccess('access', { mode: 'assigned', groups: ['staff', 'staff'] })).toEqual({
      mode: 'assigned',
      groups: ['staff'],
      users: [],
      backends: [],
    });
  });
});

describe('checkRolesAttribute', () => {
  const fixed = ['uid', 'mail', 'displayName', 'groups'];
  it.each(['uid', 'mail', 'displayName', 'groups', 'Groups', 'DISPLAYNAME'])('refuses %s, a fixed attribute', (name) => {
    expect(refusal(() => checkRolesAttribute('rolesAttribute', name, fixed))).toEqual([
      'rolesAttribute',
      expect.stringMatching(/fixed attributes/),
    ]);
  });

  it('keeps any other name, and null', () => {
    expect(checkRolesAttribute('rolesAttribute', 'memberOf', fixed)).toBe('memberOf');
    expect(checkRolesAttribute('rolesAttribute', null, fixed)).toBeNull();
  });
});

describe('userClaims: an email from a mapping is never called verified', () => {
  const user: ReleasedUser = {
    id: 'u-1',
    backend: 'corp',
    username: 'mira',
    email: 'mira@example.org',
    emailVerified: true,
    displayName: 'Mira',
    groups: [],
    attributes: { personalMail: 'mira@home.example' },
    disabled: false,
  };
  const mapping = (m: Partial<ClaimMapping>): ClaimMapping => ({
    claim: 'email',
    source: 'attribute',
    attribute: 'personalMail',
    value: null,
    groupFilter: null,
    multiValued: false,
    scope: null,
    targets: ['id_token', 'userinfo'],
    ...m,
  });
  const client = (...claimMappings: ClaimMapping[]) => ({ appRoles: [], claimMappings });

  it('a mapped address other than the verified one comes with email_verified false', () => {
    expect(userClaims(client(mapping({})), user, ['openid', 'email'], 'id_token')).toMatchObject({
      email: 'mira@home.example',
      email_verified: false,
    });
    // Without the email scope: the mapped address alone, still not verified.
    expect(userClaims(client(mapping({})), user, ['openid'], 'userinfo')).toMatchObject({
      email: 'mira@home.example',
      email_verified: false,
    });
  });

  it('the verified address itself, mapped, keeps email_verified true', () => {
    expect(userClaims(client(mapping({ source: 'email', attribute: null })), user, ['openid', 'email'], 'id_token')).toMatchObject({
      email: 'mira@example.org',
      email_verified: true,
    });
  });

  it('an unverified address stays unverified, and claims without a mapped email are as the scopes give them', () => {
    const unverified = { ...user, emailVerified: false };
    expect(
      userClaims(
        client(mapping({ source: 'static', attribute: null, value: 'mira@example.org' })),
        unverified,
        ['openid', 'email'],
        'id_token',
      ),
    ).toMatchObject({
      email: 'mira@example.org',
      email_verified: false,
    });
    expect(userClaims(client(mapping({ claim: 'mail2' })), user, ['openid', 'email'], 'id_token')).toMatchObject({
      email: 'mira@example.org',
      email_verified: true,
      mail2: 'mira@home.example',
    });
  });
});
