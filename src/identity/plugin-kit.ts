/**
 * The plugin kit: everything an identity backend plugin may use of Latchkey, and the only module of the
 * server a plugin imports (docs/identity-backends.md, "Writing a backend"; the layer check refuses any
 * other import from plugins/). It holds the contract a backend implements, the errors it throws, the
 * words for a directory's refusal of a new password, the password check of a backend that keeps
 * its users in Latchkey's own table (and the hash verification under it), and the span helper for its
 * calls out.
 */
export {
  BackendUnavailableError,
  defineIdentityPlugin,
  type AccountRefusal,
  type Identity,
  type IdentityBackend,
  type IdentityPlugin,
  type KerberosSettings,
  type KnownUser,
  type LocalUser,
  type LocalUsers,
  type PasswordCheck,
  type PasswordRefusal,
  type PasswordWrite,
  type PluginContext,
  type SyncSource,
} from './contract.ts';
export { REFUSAL_WORDS } from '../users/password-refusals.ts';
export { verifyPassword } from '../crypto/passwords.ts';
// docs/identity-backends.md "Desktop single sign-on": a backend's `kerberos.keytab` checked at start.
export { readKeytab, type KeytabEntry } from '../kerberos/keytab.ts';
export { localPasswordBackend } from './local-password-backend.ts';
// docs/tracing.md: a backend's calls to its directory as spans of the request, when tracing is on.
export { span, tracingOn, type Span } from '../telemetry/trace.ts';
