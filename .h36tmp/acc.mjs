import kerberos from 'kerberos';
import { readFileSync } from 'node:fs';
console.log('now', new Date().toISOString());
for (const f of process.argv.slice(2)) {
  const s = await kerberos.initializeServer('HTTP@sso.latchkey.test');
  try { await s.step(readFileSync(f, 'utf8').trim()); console.log(f, 'OK', s.username); } catch (e) { console.log(f, 'ERR', e.message); }
}
