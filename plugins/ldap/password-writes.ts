import { Attribute, Change, InvalidCredentialsError } from 'ldapts';
import type { PasswordWrite } from '../../src/identity/plugin-kit.ts';
import { adBindRefusal } from './attributes.ts';
import { PASSWORD_MODIFY_OID, PasswordPolicyControl, passwordModifyValue } from './password-policy.ts';
import { adRefusal, openLdapRefusal, refused, WRONG_PASSWORD } from './password-refusals.ts';
import { isServerAnswer, type ConnectionPool, type LdapSession } from './pool.ts';

/** Writes the passwords of one directory (docs/identity-backends.md). Refusals are answers; outages throw from the pools. */
export interface PasswordWriter {
  /** As the user, with their old password. */
  change(dn: string, oldPassword: string, newPassword: string): Promise<PasswordWrite>;
  /** With the service account's rights. */
  reset(dn: string, newPassword: string): Promise<PasswordWrite>;
}

interface Pools {
  /** Bound as the service account. */
  searches: ConnectionPool;
  /** Bound as whoever signs in last. */
  binds: ConnectionPool;
}

/** Runs a write; a refusal from the server is the answer `refuse` draws from it, anything else is thrown (an outage). */
async function answer(
  write: () => Promise<void>,
  refuse: (err: { code: number; message: string }) => PasswordWrite,
): Promise<PasswordWrite> {
  try {
    await write();
    return { ok: true };
  } catch (err) {
    if (isServerAnswer(err)) return refuse(err);
    throw err;
  }
}

/**
 * OpenLDAP: RFC 3062's Password Modify, with ppolicy's control to hear why a new password is refused.
 * The user's change runs on a connection bound as them; with `changeAfterReset` that bind is limited
 * to this very operation, and with an expired password it works only while grace logins remain.
 */
export function openLdapWriter(pools: Pools): PasswordWriter {
  const modify = async (s: LdapSession, dn: string, newPassword: string, oldPassword?: string) => {
    const policy = new PasswordPolicyControl();
    return answer(
      () => s.exop(PASSWORD_MODIFY_OID, passwordModifyValue({ dn, oldPassword, newPassword }), [policy]),
      (err) => openLdapRefusal(policy.error, err),
    );
  };
  return {
    change: (dn, oldPassword, newPassword) =>
      pools.binds.use(async (s) => {
        const policy = new PasswordPolicyControl();
        try {
          await s.bind(dn, oldPassword, [policy]);
        } catch (err) {
          if (!(err instanceof InvalidCredentialsError)) throw err;
          if (policy.error !== 'passwordExpired') return WRONG_PASSWORD;
          return refused(
            'refused',
            'The password has expired and the directory allows no more sign-ins with it: ask your administrator to reset it.',
          );
        }
        return modify(s, dn, newPassword, oldPassword);
      }),
    reset: (dn, newPassword) =>
      pools.searches.use(async (s) => {
        const written = await modify(s, dn, newPassword);
        if (written.ok) await clearMustChange(s, dn);
        return written;
      }),
  };
}

/**
 * With `pwdMustChange`, a directory may mark a password set by anyone but its owner `pwdReset` (some
 * ppolicy versions and overlays do; OpenLDAP 2.5's drops the mark on any password write), and the
 * next sign-in would then demand a new one, which `pwdMinAge` could refuse: a user who just chose
 * their password by mail would be stranded. A reset is the user's own choice, so any mark is taken
 * off. It needs the service account's write access to `pwdReset`; a directory that refuses it (or has
 * no ppolicy, or no mark) keeps the password written.
 */
async function clearMustChange(s: LdapSession, dn: string): Promise<void> {
  try {
    await s.modify(dn, [new Change({ operation: 'delete', modification: new Attribute({ type: 'pwdReset', values: [] }) })]);
  } catch (err) {
    if (!isServerAnswer(err)) throw err;
  }
}

/** AD's `unicodePwd` value: the password in double quotes, UTF-16LE. */
const unicodePwd = (password: string) => Buffer.from(`"${password}"`, 'utf16le');

const pwdChange = (operation: 'add' | 'delete' | 'replace', password: string) =>
  new Change({ operation, modification: new Attribute({ type: 'unicodePwd', values: [unicodePwd(password)] }) });

/**
 * Active Directory: a change deletes the old value and adds the new in one modify (AD checks the old
 * one, and applies its complexity, history and minimum age); a reset replaces it. The config refuses
 * both unless the connection is TLS. A user whose password expired or must change cannot bind: AD lets
 * any authenticated account make that change (the old password is the proof), so it runs on the
 * service account's connection then.
 */
export function adWriter(pools: Pools): PasswordWriter {
  const change = (s: LdapSession, dn: string, oldPassword: string, newPassword: string) =>
    answer(() => s.modify(dn, [pwdChange('delete', oldPassword), pwdChange('add', newPassword)]), adRefusal);
  return {
    async change(dn, oldPassword, newPassword) {
      const asUser = await pools.binds.use(async (s) => {
        try {
          await s.bind(dn, oldPassword);
        } catch (err) {
          if (!(err instanceof InvalidCredentialsError)) throw err;
          const why = adBindRefusal(err.message);
          return why === 'password_expired' || why === 'password_must_change' ? 'cannot-bind' : WRONG_PASSWORD;
        }
        return change(s, dn, oldPassword, newPassword);
      });
      if (asUser !== 'cannot-bind') return asUser;
      return pools.searches.use((s) => change(s, dn, oldPassword, newPassword));
    },
    reset: (dn, newPassword) => pools.searches.use((s) => answer(() => s.modify(dn, [pwdChange('replace', newPassword)]), adRefusal)),
  };
}
