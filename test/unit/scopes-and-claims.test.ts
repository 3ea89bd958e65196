import { describe, expect, it } from '@jest/globals';
import type { Client } from '../../src/clients/model.ts';
import {
  ADMIN_CLIENTS,
  ADMIN_SCOPE,
  clientScopes,
  grantableScopes,
  OFFLINE_ACCESS,
  requestedScopes,
  scopesAllowed,
  withoutIgnoredScopes,
} from '../../src/clients/scopes.ts';
import { OAuthError } from '../../src/errors/oauth.ts';
import { scopedClaims, type ClaimsUser } from '../../src/tokens/claims.ts';

type Registered = Pick<Client, 'grantTypes' | 'scopes'>;
/** A client registered with openid and profile, without the refresh grant. */
const noRefresh: Registered = { grantTypes: ['authorization_code'], scopes: ['openid', 'profile'] };
/** The same, with the refresh grant. */
const refreshing: Registered = { grantTypes: ['authorization_code', 'refresh_token'], scopes: ['openid', 'profile'] };

/** What the call threw, as `[code, status, description]`. */
function refusal(call: () => unknown): [string, number, string] {
  try {
    call();
  } catch (err) {
    if (err instanceof OAuthError) return [err.error, err.status, err.message];
    throw err;
  }
  throw new Error('no refusal');
}

describe('scopesAllowed: what a client may ask for', () => {
  it('its registered scopes', () => {
    expect(scopesAllowed(noRefresh)).toEqual(['openid', 'profile']);
  });

  it('and offline_access whenever it may refresh', () => {
    expect(scopesAllowed(refreshing)).toEqual(['openid', 'profile', OFFLINE_ACCESS]);
    expect(OFFLINE_ACCESS).toBe('offline_access');
  });

  it('offline_access once, when it is registered too', () => {
    expect(scopesAllowed({ grantTypes: ['refresh_token'], scopes: ['openid', 'offline_access'] })).toEqual(['openid', 'offline_access']);
  });
});

describe('withoutIgnoredScopes: offline_access without the refresh grant is dropped, not refused (OIDC Core 11)', () => {
  it('dropped for a client that may not refresh', () => {
    expect(withoutIgnoredScopes(['openid', 'offline_access', 'profile'], noRefresh)).toEqual(['openid', 'profile']);
  });

  it('kept for a client that may', () => {
    expect(withoutIgnoredScopes(['openid', 'offline_access'], refreshing)).toEqual(['openid', 'offline_access']);
  });
});

describe('requestedScopes: the scopes asked for, each allowed', () => {
  it('none asked means the fallback', () => {
    expect(requestedScopes(undefined, ['openid'], ['openid', 'email'])).toEqual(['openid', 'email']);
    expect(requestedScopes('', ['openid'], ['openid', 'email'])).toEqual(['openid', 'email']);
  });

  it('asked ones in the order asked, each once, extra spaces ignored', () => {
    expect(requestedScopes('email  openid email', ['openid', 'email'], [])).toEqual(['email', 'openid']);
  });

  it('one not allowed refuses the request with invalid_scope, naming every such scope', () => {
    expect(refusal(() => requestedScopes('openid groups admin', ['openid'], []))).toEqual([
      'invalid_scope',
      400,
      'scope not allowed: groups admin',
    ]);
  });
});

describe('clientScopes: a user grant’s scopes at the token endpoint', () => {
  it('none asked: the client’s registered scopes (not offline_access)', () => {
    expect(clientScopes(undefined, refreshing)).toEqual(['openid', 'profile']);
  });

  it('offline_access asked by a client that may refresh is granted', () => {
    expect(clientScopes('openid offline_access', refreshing)).toEqual(['openid', 'offline_access']);
  });

  it('offline_access asked by a client that may not refresh is dropped; asked alone, the client’s scopes', () => {
    expect(clientScopes('openid offline_access', noRefresh)).toEqual(['openid']);
    expect(clientScopes('offline_access', noRefresh)).toEqual(['openid', 'profile']);
  });

  it('a scope the client was not registered with is refused', () => {
    expect(refusal(() => clientScopes('openid email', noRefresh))).toEqual(['invalid_scope', 400, 'scope not allowed: email']);
  });
});

describe('the admin scope (docs/admin-api.md)', () => {
  const appClient: Registered = { grantTypes: ['authorization_code'], scopes: ['openid'] };
  const adminRegistered: Registered = { grantTypes: ['authorization_code'], scopes: ['openid', ADMIN_SCOPE] };

  it('is `admin`, and the built-in admin clients are admin-cli and admin-console', () => {
    expect(ADMIN_SCOPE).toBe('admin');
    expect([...ADMIN_CLIENTS].sort()).toEqual(['admin-cli', 'admin-console']);
  });

  it('an application not registered with it cannot ask for it', () => {
    expect(refusal(() => clientScopes('openid admin', appClient))).toEqual(['invalid_scope', 400, 'scope not allowed: admin']);
  });

  it('a client registered with it may ask', () => {
    expect(clientScopes('openid admin', adminRegistered)).toEqual(['openid', 'admin']);
  });

  it('is granted only to a user with an admin role; dropped (not refused) for anyone else', () => {
    expect(grantableScopes(['openid', 'admin', 'profile'], { roles: ['admin'] })).toEqual(['openid', 'admin', 'profile']);
    // Any admin role (auditor, helpdesk, a custom one): the admin API judges what it gives.
    expect(grantableScopes(['openid', 'admin', 'profile'], { roles: ['auditor'] })).toEqual(['openid', 'admin', 'profile']);
    expect(grantableScopes(['openid', 'admin'], { roles: [] })).toEqual(['openid']);
  });
});

describe('scopedClaims: the claims each scope releases (userinfo and the id_token)', () => {
  const alice: ClaimsUser = {
    id: 'u-1',
    username: 'alice',
    email: 'alice@example.com',
    emailVerified: true,
    displayName: 'Alice Liddell',
    groups: ['staff', 'ops'],
  };

  it('openid alone: the subject only', () => {
    expect(scopedClaims(alice, ['openid'])).toEqual({ sub: 'u-1' });
  });

  it('profile: the name (the username when none is set) and preferred_username', () => {
    expect(scopedClaims(alice, ['openid', 'profile'])).toEqual({ sub: 'u-1', name: 'Alice Liddell', preferred_username: 'alice' });
    expect(scopedClaims({ ...alice, displayName: null }, ['profile'])).toEqual({ sub: 'u-1', name: 'alice', preferred_username: 'alice' });
  });

  it('email: the address and whether it is verified, as stored', () => {
    expect(scopedClaims(alice, ['email'])).toEqual({ sub: 'u-1', email: 'alice@example.com', email_verified: true });
    expect(scopedClaims({ ...alice, emailVerified: false }, ['email'])).toEqual({
      sub: 'u-1',
      email: 'alice@example.com',
      email_verified: false,
    });
  });

  it('email for a user without an address: nothing, not even email_verified', () => {
    expect(scopedClaims({ ...alice, email: null }, ['email'])).toEqual({ sub: 'u-1' });
  });

  it('groups: the groups, an empty list included', () => {
    expect(scopedClaims(alice, ['groups'])).toEqual({ sub: 'u-1', groups: ['staff', 'ops'] });
    expect(scopedClaims({ ...alice, groups: [] }, ['groups'])).toEqual({ sub: 'u-1', groups: [] });
  });

  it('every scope together releases all of them; other scopes release nothing', () => {
    expect(scopedClaims(alice, ['openid', 'profile', 'email', 'groups', 'offline_access', 'admin'])).toEqual({
      sub: 'u-1',
      name: 'Alice Liddell',
      preferred_username: 'alice',
      email: 'alice@example.com',
      email_verified: true,
      groups: ['staff', 'ops'],
    });
  });
});
