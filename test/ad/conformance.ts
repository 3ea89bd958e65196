import type { DatabaseKind } from '../helpers/databases.ts';
import { startTestServer } from '../helpers/server.ts';
import { ldapChain } from '../helpers/slapd.ts';
import { backendConformance } from '../identity/conformance-suite.ts';
import { people, type AdPerson } from './directory.ts';
import { adConfig, startTlsConfig } from './harness.ts';

const account = (p: AdPerson) => ({ username: p.sam, password: p.password });

/** The suite every backend passes, against the LDAP backend configured for Active Directory. */
export function adConformance(kind: DatabaseKind, transport: 'ldaps' | 'StartTLS'): void {
  backendConformance(`ldap on Active Directory (Samba, ${transport}) on ${kind}`, async () => {
    const server = await startTestServer(kind, ldapChain(transport === 'ldaps' ? adConfig() : startTlsConfig()));
    return {
      server,
      backendId: 'corp',
      active: account(people.alice),
      disabled: account(people.dora),
      special: account(people.special),
      stop: () => server.stop(),
    };
  });
}
