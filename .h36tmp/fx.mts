import { startSambaDc } from '../test/helpers/samba.ts';
import { kerberosFixture } from '../test/helpers/kerberos.ts';
import { createServer } from 'node:http';
import kerberos from 'kerberos';
const dc = await startSambaDc('', { kdc: true });
const krb = await kerberosFixture(dc);
try {
  await dc.asAdmin((c) => c.add('OU=Latchkey People,DC=latchkey,DC=test', { objectClass: ['organizationalUnit'] }));
  await krb.user('carol', 'Carol-Pw-123!');
  const t = await krb.kinit('carol', 'Carol-Pw-123!');
  console.log(await t.list());
  const tok = await krb.token(t);
  console.log('token', tok.slice(0, 30));
  // a tiny negotiate server, real env set by fixture
  const srv = createServer(async (req, res) => {
    const h = req.headers.authorization;
    if (!h) { res.writeHead(401, { 'www-authenticate': 'Negotiate' }); return res.end('form'); }
    const s = await kerberos.initializeServer('HTTP@sso.latchkey.test');
    try { await s.step(h.slice(10)); res.writeHead(302, { location: '/done?u=' + s.username, 'www-authenticate': 'Negotiate ' + s.response }); res.end(); }
    catch (e) { res.writeHead(403); res.end(String(e)); }
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  console.log(await krb.curl(t, `http://sso.latchkey.test:${port}/x`));
  console.log(await krb.python(t, `http://sso.latchkey.test:${port}/y`));
  srv.close();
} finally { await krb.destroy(); await dc.destroy(); }
