import { lstatSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KerberosRefusal } from './model.ts';

/** What the GSSAPI library made of a token. */
export type Acceptance =
  /** `principal`: the client's, `name@REALM`; `service`: the ticket's; `mutual`: the answer token (base64), if any. */
  | { ok: true; principal: string; service: string; mutual?: string }
  /** `fault`: the acceptor itself failed (the keytab gone, say), not the token. */
  | { ok: false; reason: KerberosRefusal; detail: string; fault?: boolean };

export interface Acceptor {
  accept(token: string): Promise<Acceptance>;
}

/**
 * MIT krb5's words for why it refused an AP-REQ (its error table, as the binding reports it after
 * GSSAPI's own), and the reason each is refused for. Anything else is a token this server cannot read.
 */
const MIT_ERRORS: [RegExp, KerberosRefusal][] = [
  [/Request is a replay/i, 'replay'],
  [/Clock skew too great|Ticket not yet valid/i, 'clock_skew'],
  [/Ticket expired/i, 'expired'],
  [
    /not found in keytab|No key table entry|cannot decrypt ticket|Wrong principal in request|Cannot find key of appropriate type|Key version number for principal in key table is incorrect|integrity check failed/i,
    'wrong_service',
  ],
];

export const refusalOf = (message: string): KerberosRefusal => MIT_ERRORS.find(([words]) => words.test(message))?.[1] ?? 'invalid_token';

/**
 * The replay cache's folder: the operator's `KRB5RCACHEDIR`, else one of this user's under the temp
 * folder, shared by every worker of the host (a replay to another worker is caught too) and by no other
 * user: made 0700, refused when it is a link or someone else's.
 */
function replayCacheDir(): string {
  const dir = process.env.KRB5RCACHEDIR || join(tmpdir(), `latchkey-krb5-rcache-${process.getuid?.() ?? 'user'}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || (process.getuid && stat.uid !== process.getuid()) || stat.mode & 0o022)
    throw new Error(`the Kerberos replay cache folder ${dir} must be a folder of this user's that no one else may write to`);
  return dir;
}

/**
 * The acceptor: MongoDB's `kerberos` binding over the system's MIT GSSAPI library
 * (docs/decisions.md "Desktop single sign-on"), imported only here, and this module only when a
 * backend has `kerberos`. The library reads its keytab and replay cache from the environment, which is
 * one per process: set once, at start, before any token is accepted.
 *
 * It accepts with the default credential (any key of the keytab) rather than a host-based name: the
 * library would canonicalise that name through DNS, and a CNAME in front of the server would then name
 * the wrong key. Which service a ticket is for is checked from the token itself before (spnego.ts) and
 * from the context after.
 */
export async function loadAcceptor(keytab: string): Promise<Acceptor> {
  process.env.KRB5_KTNAME = `FILE:${keytab}`;
  process.env.KRB5RCACHEDIR = replayCacheDir();
  const loaded = (await import('kerberos')) as typeof import('kerberos') & { default?: typeof import('kerberos') };
  const gss = loaded.default ?? loaded;
  return {
    async accept(token) {
      let context: Awaited<ReturnType<typeof gss.initializeServer>>;
      try {
        context = await gss.initializeServer('');
      } catch (err) {
        return { ok: false, reason: 'invalid_token', detail: (err as Error).message, fault: true };
      }
      try {
        await context.step(token);
      } catch (err) {
        const detail = (err as Error).message;
        // The keytab gone or unreadable since the start: the server's fault, whatever the token.
        if (/Key table file .* not found|Permission denied/i.test(detail))
          return { ok: false, reason: 'invalid_token', detail, fault: true };
        return { ok: false, reason: refusalOf(detail), detail };
      }
      if (!context.contextComplete || !context.username)
        return { ok: false, reason: 'invalid_token', detail: 'the context needs another round trip' };
      return { ok: true, principal: context.username, service: context.targetName ?? '', mutual: context.response || undefined };
    },
  };
}
