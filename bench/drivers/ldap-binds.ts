/**
 * The LDAP ceiling: plain simple binds in a closed loop, one ldapts client (one connection) per
 * worker, each worker binding its own user, as many workers as the grant's wrk has connections. The
 * same client library Latchkey's LDAP backend uses. Run by the bench as its own process; prints a
 * Measurement as JSON.
 */
import { Client } from 'ldapts';
import { closedLoop } from '../measurement.ts';

export interface LdapBindsInput {
  url: string;
  users: Array<{ dn: string; password: string }>;
  concurrency: number;
  seconds: number;
}

const input = JSON.parse(process.argv[2] ?? '{}') as LdapBindsInput;
const clients = Array.from({ length: input.concurrency }, () => new Client({ url: input.url, timeout: 5000 }));
const result = await closedLoop(input.concurrency, input.seconds, 'Node driver (ldapts)', async (worker) => {
  const user = input.users[worker % input.users.length]!;
  await clients[worker]!.bind(user.dn, user.password);
});
await Promise.all(clients.map((c) => c.unbind().catch(() => undefined)));
process.stdout.write(`${JSON.stringify(result)}\n`);
