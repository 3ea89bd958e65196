import { describe, expect, test } from '@jest/globals';
import { ConfigError, loadConfig } from '../../src/config/load.ts';

describe('configuration', () => {
  test('defaults match docs/configuration.md', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      publicUrl: 'http://localhost:8080',
      databaseUrl: 'sqlite:./data/latchkey.db',
    });
    expect(config.identity.backends).toEqual([{ id: 'local', plugin: 'database', config: {} }]);
    expect(config.tokens.codeTtl).toBe(60);
  });

  test('environment values override; PUBLIC_URL follows PORT unless given', () => {
    expect(loadConfig({ PORT: '9090' }).publicUrl).toBe('http://localhost:9090');
    expect(loadConfig({ PUBLIC_URL: 'https://sso.example.com/' }).publicUrl).toBe('https://sso.example.com');
  });

  test('a bad value names its key', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/port:/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/databaseUrl: must start with postgres:\/\/ or sqlite:/);
    expect(() => loadConfig({ LATCHKEY_SECRET: 'short' })).toThrow(/secret: must be at least 32 characters/);
    expect(() => loadConfig({ LATCHKEY_CONFIG: '/nonexistent/latchkey.yaml' })).toThrow(/LATCHKEY_CONFIG/);
  });

  test('logout.backchannelClaimLease: 30 s by default, never shorter than a delivery', () => {
    expect(loadConfig({}).logout.backchannelClaimLease).toBe(30_000);
    expect(loadConfig({}, { logout: { backchannelClaimLease: 6000 } }).logout.backchannelClaimLease).toBe(6000);
    expect(() => loadConfig({}, { logout: { backchannelClaimLease: 1000 } })).toThrow(
      /logout\.backchannelClaimLease: must be at least 6000/,
    );
  });

  test('unknown keys are refused at every level, each named with where it stands (docs/decisions.md "Unknown configuration keys")', () => {
    expect(() => loadConfig({}, { prot: 8080 })).toThrow(/prot: unknown key at the top level/);
    expect(() => loadConfig({}, { throttle: { userFreeFailure: 3 } })).toThrow(/throttle\.userFreeFailure: unknown key in throttle/);
    // Beside `plugin:`, where a misplaced block once started the server and did nothing.
    const backends = [{ id: 'corp', plugin: 'ldap', config: {}, kerberos: { keytab: '/etc/krb5.keytab' } }];
    expect(() => loadConfig({}, { identity: { backends } })).toThrow(
      /identity\.backends\.0\.kerberos: unknown key in identity\.backends\.0 \(id "corp"\)/,
    );
    // Every fault is listed, not only the first.
    expect(() => loadConfig({}, { prot: 1, session: { ttl: 60, tll: 60 } })).toThrow(
      /session\.tll: unknown key in session\n\s*prot: unknown key at the top level/,
    );
  });
});
