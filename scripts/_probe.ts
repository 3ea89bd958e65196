import { z } from 'zod';
import { configSchema as a } from './_old_schema.ts';
import { configSchema as b } from '../src/config/schema.ts';
const strip = (x: unknown): unknown => JSON.parse(JSON.stringify(x, (k, v) => (['description', 'env', 'unit', 'defaultText'].includes(k) ? undefined : v)));
const ja = JSON.stringify(strip(z.toJSONSchema(a, { io: 'input', unrepresentable: 'any' })));
const jb = JSON.stringify(strip(z.toJSONSchema(b, { io: 'input', unrepresentable: 'any' })));
console.log('json same:', ja === jb);
console.log('parse same:', JSON.stringify(a.parse({})) === JSON.stringify(b.parse({})));
const samples: unknown[] = [{ port: '70000' }, { mfa: { required: 'true' } }, { passwordReset: { enabled: 'true' } }, { identity: { upstreams: [{ id: 'local', name: 'x' }] } }, { logout: { backchannelClaimLease: 100 } }, { tokens: { codeTtl: '0' } }, { secret: 'short' }, { workers: 'auto' }, { outbound: { denyNetworks: ['x'] } }, { bogus: 1 }];
for (const s of samples) {
  const ra = a.safeParse(s), rb = b.safeParse(s);
  console.log(JSON.stringify(ra.success ? ra.data : ra.error.issues) === JSON.stringify(rb.success ? rb.data : rb.error.issues));
}
