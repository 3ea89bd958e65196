import { afterAll, beforeAll, describe } from '@jest/globals';
import { databaseKinds } from '../helpers/databases.ts';
import { startSambaDc } from '../helpers/samba.ts';
import { accessTests } from './access.ts';
import { accountTests } from './accounts.ts';
import { bindRefusalTests } from './bind-refusals.ts';
import { adConformance } from './conformance.ts';
import { domainLdif } from './directory.ts';
import { domain } from './harness.ts';
import { kerberosTests } from './kerberos.ts';
import { kerberosChromiumTests } from './kerberos-chromium.ts';
import { outageTests } from './outage.ts';
import { passwordTests } from './passwords.ts';
import { syncTests } from './sync.ts';

/**
 * Latchkey against a real Active Directory: a Samba 4.17 domain controller, provisioned once for all
 * of these (it takes most of the suite's time), through real Latchkey servers over HTTP.
 */
describe('Active Directory (Samba 4.17 domain controller)', () => {
  beforeAll(async () => {
    // With its KDC, for desktop single sign-on (kerberos.ts, test/helpers/kerberos.ts).
    domain.dc = await startSambaDc(domainLdif(), { kdc: true });
  });
  afterAll(async () => {
    await domain.dc?.destroy();
  });

  adConformance('sqlite', 'ldaps');
  adConformance('postgres', 'StartTLS');
  for (const kind of databaseKinds) {
    accountTests(kind);
    bindRefusalTests(kind);
    outageTests(kind);
    accessTests(kind);
  }
  // docs/identity-backends.md's writes; the database side of the change step runs on both databases in the slapd suite.
  passwordTests('sqlite');
  // Desktop single sign-on against the DC's KDC: every case on SQLite, the sign-in and the client setting on PostgreSQL too.
  kerberosTests('sqlite');
  kerberosTests('postgres', { all: false });
  // docs/windows-desktop-sso.md's browsers: Chromium signed in by a ticket from the DC's KDC.
  kerberosChromiumTests('sqlite');
  // Last: its set-up restarts the DC once, to add 1,600 users offline.
  for (const kind of databaseKinds) syncTests(kind);
});
