import { defineIdentityPlugin } from '../../src/identity/plugin-kit.ts';
import { LdapBackend } from './backend.ts';
import { ldapConfig } from './config.ts';

/** The built-in LDAP / Active Directory backend (docs/identity-backends.md), where every config key is described. */
export default defineIdentityPlugin({
  id: 'ldap',
  configSchema: ldapConfig,
  create: (config, ctx) => new LdapBackend(config, ctx.logger),
});
