import { describe, expect, it } from '@jest/globals';
import { judgeBearer } from '../../src/tokens/bearer.ts';
import type { AccessGrant } from '../../src/tokens/model.ts';

const NOW = 1_800_000_000_000;

type GrantUser = NonNullable<AccessGrant['user']>;
const alice: GrantUser = {
  id: 'u-alice',
  backend: 'local',
  username: 'alice',
  email: null,
  emailVerified: false,
  displayName: null,
  groups: [],
  roles: [],
  attributes: {},
  disabled: false,
};

/** A live user token of client `app`, good for another minute. */
const grant = (over: Partial<AccessGrant> = {}): AccessGrant => ({
  clientId: 'app',
  userId: alice.id,
  sessionId: 's1',
  scopes: ['openid'],
  audience: 'https://api.example.com',
  expiresAt: NOW + 60_000,
  createdAt: NOW - 60_000,
  client: { oauthEnabled: true, roles: [], scopes: ['openid'], appRoles: [], claimMappings: [] },
  user: alice,
  ...over,
});

describe('judgeBearer: the one answer about a presented access token', () => {
  it('a live token is good, with its grant as it was read', () => {
    const g = grant();
    const answer = judgeBearer(g, NOW);
    expect(answer).toEqual({ ok: true, grant: g });
    expect(answer.ok && answer.grant).toBe(g);
  });

  it('a token the read cannot find is unknown and names no client: never issued, or revoked (revocation deletes the row)', () => {
    expect(judgeBearer(undefined, NOW)).toEqual({ ok: false, refusal: 'unknown' });
  });

  it('a token is expired at its expiry instant, and good one millisecond before', () => {
    expect(judgeBearer(grant({ expiresAt: NOW }), NOW)).toEqual({ ok: false, refusal: 'expired', clientId: 'app' });
    expect(judgeBearer(grant({ expiresAt: NOW - 1 }), NOW)).toEqual({ ok: false, refusal: 'expired', clientId: 'app' });
    expect(judgeBearer(grant({ expiresAt: NOW + 1 }), NOW).ok).toBe(true);
  });

  it('a user token whose user is gone is user_gone', () => {
    expect(judgeBearer(grant({ user: null }), NOW)).toEqual({ ok: false, refusal: 'user_gone', clientId: 'app' });
  });

  it('a client_credentials token (no user at all) is good', () => {
    expect(judgeBearer(grant({ userId: null, user: null }), NOW).ok).toBe(true);
  });

  it('a disabled user’s token is user_disabled', () => {
    expect(judgeBearer(grant({ user: { ...alice, disabled: true } }), NOW)).toEqual({
      ok: false,
      refusal: 'user_disabled',
      clientId: 'app',
    });
  });

  it('a token of a client whose oauthEnabled is off is oauth_disabled', () => {
    expect(judgeBearer(grant({ client: { oauthEnabled: false, roles: [], scopes: [], appRoles: [], claimMappings: [] } }), NOW)).toEqual({
      ok: false,
      refusal: 'oauth_disabled',
      clientId: 'app',
    });
  });

  it('the token’s own state comes first, then its user, then its client', () => {
    const off = { oauthEnabled: false, roles: [], scopes: [], appRoles: [], claimMappings: [] };
    expect(judgeBearer(grant({ expiresAt: NOW, user: null, client: off }), NOW)).toMatchObject({ refusal: 'expired' });
    expect(judgeBearer(grant({ user: null, client: off }), NOW)).toMatchObject({ refusal: 'user_gone' });
    expect(judgeBearer(grant({ user: { ...alice, disabled: true }, client: off }), NOW)).toMatchObject({ refusal: 'user_disabled' });
  });

  it('judges no audience: whom the token is for is the resource’s to check (introspection reports it as `aud`)', () => {
    expect(judgeBearer(grant({ audience: 'https://elsewhere.example.org' }), NOW).ok).toBe(true);
    expect(judgeBearer(grant({ audience: null }), NOW).ok).toBe(true);
  });
});
