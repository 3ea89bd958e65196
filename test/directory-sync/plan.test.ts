import { describe, expect, test } from '@jest/globals';
import type { Identity } from '../../src/identity/contract.ts';
import { planSync } from '../../src/directory-sync/plan.ts';
import type { User } from '../../src/users/model.ts';

/** The rules of a pass (docs/directory-sync.md "What a pass does"), without a directory or a database. */
let ids = 0;
const plan = (listing: Identity[], locals: User[]) => planSync('corp', listing, locals, { now: 1000, newId: () => `new-${++ids}` });

const person = (name: string, extra: Partial<Identity> = {}): Identity => ({
  externalId: `uuid-${name}`,
  username: name,
  email: `${name}@example.org`,
  displayName: name.toUpperCase(),
  groups: ['staff'],
  roles: [],
  attributes: { employeeNumber: '1' },
  ...extra,
});

const record = (name: string, extra: Partial<User> = {}): User => ({
  id: `id-${name}`,
  backend: 'corp',
  externalId: `uuid-${name}`,
  username: name,
  email: `${name}@example.org`,
  emailVerified: true,
  displayName: name.toUpperCase(),
  passwordHash: null,
  roles: [],
  groups: ['staff'],
  attributes: { employeeNumber: '1' },
  disabled: false,
  disabledBy: null,
  createdAt: 1,
  updatedAt: 1,
  ...extra,
});

describe('a directory sync pass plans', () => {
  test('nothing for a directory that did not change', () => {
    const p = plan([person('alice'), person('bob')], [record('alice'), record('bob')]);
    expect(p).toMatchObject({ listed: 2, enabled: 2, creates: [], updates: [], renames: [], returners: [], leavers: [] });
  });

  test('a record for a joiner, as a first sign-in would make it; none for a disabled entry never seen', () => {
    const p = plan([person('alice'), person('dora', { groups: ['new'] }), person('ed', { disabled: true })], [record('alice')]);
    expect(p.creates).toEqual([
      expect.objectContaining({
        backend: 'corp',
        externalId: 'uuid-dora',
        username: 'dora',
        email: 'dora@example.org',
        emailVerified: true,
        groups: ['new'],
        disabled: false,
        disabledBy: null,
        passwordHash: null,
        createdAt: 1000,
      }),
    ]);
  });

  test("a mover's new groups, attributes and email; roles and attributes the backend does not report are kept", () => {
    const p = plan(
      [
        person('alice', { groups: ['sales', 'staff'], attributes: { employeeNumber: '2' }, email: 'a@new.example' }),
        person('bob', { roles: undefined, attributes: undefined }),
      ],
      [record('alice'), record('bob', { roles: ['auditor'], attributes: { set: 'by admin' }, groups: ['old'] })],
    );
    expect(p.updates.map(({ user: u, keep }) => [u.username, u.groups, u.attributes, u.email, u.roles, keep])).toEqual([
      ['alice', ['sales', 'staff'], { employeeNumber: '2' }, 'a@new.example', [], { roles: false, attributes: false }],
      // Written as the row holds them then, not as read: an administrator may change them meanwhile.
      ['bob', ['staff'], { set: 'by admin' }, 'bob@example.org', ['auditor'], { roles: true, attributes: true }],
    ]);
    expect(p.emailChanged).toEqual(['id-alice']);
  });

  test('leavers: gone (not_found), disabled, expired; never a disabled or retired record', () => {
    const p = plan(
      [
        person('bob', { disabled: true }),
        person('carol', { disabled: true, refusal: 'account_expired' }),
        person('ed', { disabled: true }),
      ],
      [
        record('alice'),
        record('bob'),
        record('carol'),
        record('ed', { disabled: true, disabledBy: 'admin' }),
        record('fay', { disabled: true, disabledBy: 'directory' }),
        record('old', { username: 'old~id-old' }),
      ],
    );
    expect(p.leavers.map((l) => [l.user.username, l.reason])).toEqual([
      ['bob', 'disabled'],
      ['carol', 'expired'],
      ['alice', 'not_found'],
    ]);
    expect(p.enabled).toBe(4);
  });

  test("returners: a directory's disabling is undone, an administrator's never", () => {
    const p = plan(
      [person('alice'), person('bob')],
      [record('alice', { disabled: true, disabledBy: 'directory' }), record('bob', { disabled: true, disabledBy: 'admin' })],
    );
    expect(p.returners.map((u) => u.username)).toEqual(['alice']);
    expect(p.leavers).toEqual([]);
  });

  test("a name now held by another entry's record: that record gives it up (name~id) before the joiner takes it", () => {
    const p = plan([person('alice', { externalId: 'uuid-new-alice' })], [record('alice')]);
    expect(p.renames).toEqual([{ id: 'id-alice', from: 'alice', to: 'alice~id-alice' }]);
    expect(p.creates.map((u) => u.username)).toEqual(['alice']);
    // The old entry is gone: it is also a leaver.
    expect(p.leavers.map((l) => [l.user.id, l.reason])).toEqual([['id-alice', 'not_found']]);
  });

  test('two entries that swap names: both give theirs up first, then take the new ones', () => {
    const p = plan(
      [person('alice', { externalId: 'uuid-bob' }), person('bob', { externalId: 'uuid-alice' })],
      [record('alice'), record('bob')],
    );
    expect(p.renames.map((r) => r.to).sort()).toEqual(['alice~id-alice', 'bob~id-bob']);
    expect(p.updates.map(({ user: u }) => [u.id, u.username]).sort()).toEqual([
      ['id-alice', 'bob'],
      ['id-bob', 'alice'],
    ]);
    expect(p.leavers).toEqual([]);
  });

  test('a new capital letter is a change of name that frees nothing', () => {
    const p = plan([person('Alice', { externalId: 'uuid-alice' })], [record('alice')]);
    expect(p.renames).toEqual([]);
    expect(p.updates.map(({ user: u }) => u.username)).toEqual(['Alice']);
  });

  test('a name listed twice: the later entry is left alone, neither created nor a leaver', () => {
    const p = plan(
      [person('alice'), person('ALICE', { externalId: 'uuid-other' })],
      [record('alice'), record('x', { externalId: 'uuid-other' })],
    );
    expect(p.duplicates).toEqual(['ALICE']);
    expect(p.creates).toEqual([]);
    expect(p.leavers).toEqual([]);
  });
});

test('groups and roles in another order are no change', () => {
  const p = planSync(
    'corp',
    [person('alice', { groups: ['b', 'a'], roles: ['y', 'x'] })],
    [record('alice', { groups: ['a', 'b'], roles: ['x', 'y'] })],
    {
      now: 1,
      newId: () => 'n',
    },
  );
  expect(p.updates).toEqual([]);
});
