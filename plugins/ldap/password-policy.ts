import asn1 from 'asn1';
import { Control } from 'ldapts';

/** The errors of the Password Policy response control (draft-behera-ldap-password-policy), by number. */
const ERRORS = [
  'passwordExpired',
  'accountLocked',
  'changeAfterReset',
  'passwordModNotAllowed',
  'mustSupplyOldPassword',
  'insufficientPasswordQuality',
  'passwordTooShort',
  'passwordTooYoung',
  'passwordInHistory',
] as const;

export type PolicyError = (typeof ERRORS)[number];

/**
 * OpenLDAP ppolicy's request control (no value), whose response control says why a bind or a password
 * change was refused and warns of an expiry. ldapts hands a response control it does not know to the
 * request control of the same type (`ControlParser`): so one instance is sent with each operation, and
 * read afterwards. A directory without ppolicy ignores it (it is not critical).
 */
export class PasswordPolicyControl extends Control {
  static readonly type = '1.3.6.1.4.1.42.2.27.8.5.1';
  /** Seconds until the password expires (`timeBeforeExpiration`). */
  expiresIn?: number;
  /** Binds left after the password expired (`graceAuthNsRemaining`). */
  graceRemaining?: number;
  error?: PolicyError;

  constructor() {
    super(PasswordPolicyControl.type, { critical: false });
  }

  override parseControl(reader: asn1.BerReader): void {
    if (reader.remain === 0 || reader.readSequence() === null) return;
    const end = reader.offset + reader.length;
    while (reader.offset < end) {
      const tag = reader.peek();
      if (tag === 0xa0) {
        // warning [0] CHOICE { timeBeforeExpiration [0] INTEGER, graceAuthNsRemaining [1] INTEGER }
        reader.readSequence(0xa0);
        const which = reader.peek();
        const value = reader._readTag(which ?? 0x80) ?? undefined;
        if (which === 0x80) this.expiresIn = value;
        else this.graceRemaining = value;
      } else if (tag === 0x81) {
        this.error = ERRORS[reader._readTag(0x81) ?? -1];
      } else {
        return; // something newer than this draft: what was read so far stands
      }
    }
  }
}

/**
 * The value of a Password Modify extended request (RFC 3062): `userIdentity` [0], `oldPasswd` [1],
 * `newPasswd` [2], each optional.
 */
export function passwordModifyValue(o: { dn: string; oldPassword?: string; newPassword: string }): Buffer {
  const writer = new asn1.BerWriter();
  writer.startSequence();
  writer.writeBuffer(Buffer.from(o.dn, 'utf8'), 0x80);
  if (o.oldPassword !== undefined) writer.writeBuffer(Buffer.from(o.oldPassword, 'utf8'), 0x81);
  writer.writeBuffer(Buffer.from(o.newPassword, 'utf8'), 0x82);
  writer.endSequence();
  return writer.buffer;
}

/** RFC 3062's Password Modify extended operation. */
export const PASSWORD_MODIFY_OID = '1.3.6.1.4.1.4203.1.11.1';
