import { describe, expect, test } from '@jest/globals';
import pino from 'pino';
import { ConfigError, loadConfig } from '../../src/config/load.ts';
import { loadUpstreams } from '../../src/identity/upstreams/registry.ts';

const upstream = { id: 'corp', name: 'Corp', issuer: 'https://login.example.com/tenant/v2.0', clientId: 'id', clientSecret: 'secret' };
const config = (upstreams: unknown[], backends?: unknown[]) =>
  loadConfig({ LATCHKEY_CONFIG: undefined }, { identity: { upstreams, ...(backends ? { backends } : {}) } });
const build = (entries: unknown[]) =>
  loadUpstreams(config(entries).identity.upstreams, 'https://sso.example.com', pino({ level: 'silent' }));

/** `identity.upstreams` is validated at start, like the backends: a bad entry names the upstream and the key. */
describe('identity.upstreams', () => {
  test('an OIDC entry gets its defaults; nothing is fetched at start', () => {
    const [built] = build([upstream]).list;
    expect(built).toMatchObject({ id: 'corp', name: 'Corp', kind: 'oidc', policy: { adminGroups: [], trustMfa: false } });
    expect(built!.policy.allowedDomains).toBeUndefined();
    expect(built!.state()).toBe('unknown');
  });

  test.each([
    [{ ...upstream, issuer: 'not a url' }, /identity upstream "corp" \(kind "oidc"\): invalid config: issuer/],
    [{ ...upstream, clientSecret: undefined }, /clientSecret/],
    [{ ...upstream, scopes: ['profile'] }, /scopes: must include "openid"/],
    [{ ...upstream, claim: { username: 'upn' } }, /claim: unknown key at the upstream entry/],
    [{ ...upstream, kind: 'saml' }, /identity upstream "corp" \(kind "saml"\): unknown kind; known kinds: oidc/],
  ])('a bad entry stops the start with a message naming it (%#)', (entry, message) => {
    expect(() => build([entry])).toThrow(message);
  });

  test('an upstream id may not be another upstream or a backend: its users are recorded under it', () => {
    expect(() => config([upstream, upstream])).toThrow(ConfigError);
    expect(() => config([upstream, upstream])).toThrow(/identity.upstreams.1.id: "corp" is already the id of another upstream/);
    expect(() => config([{ ...upstream, id: 'local' }])).toThrow(/"local" is already the id of an identity backend/);
  });
});
