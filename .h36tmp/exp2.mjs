import kerberos from 'kerberos';
const client = await kerberos.initializeClient('HTTP@sso.latchkey.test', { mechOID: kerberos.GSS_MECH_OID_SPNEGO });
const token = await client.step('');
console.log('token', token.length, Buffer.from(token, 'base64').subarray(0, 40).toString('hex'));
const server = await kerberos.initializeServer('HTTP@sso.latchkey.test');
await server.step(token);
console.log('user', server.username, 'complete', server.contextComplete, 'resp', server.response?.slice(0, 40), 'target', server.targetName);
const s2 = await kerberos.initializeServer('HTTP@sso.latchkey.test');
try { await s2.step(token); console.log('replay accepted!', s2.username); } catch (e) { console.log('replay:', e.message); }
const s3 = await kerberos.initializeServer('HTTP@other.latchkey.test').catch((e) => console.log('other init:', e.message));
const kt = Buffer.from('TlRMTVNTUAABAAAAB4IIogAAAAAAAAAAAAAAAAAAAAAKAGFKAAAADw==', 'base64');
const s4 = await kerberos.initializeServer('HTTP@sso.latchkey.test');
try { await s4.step(kt.toString('base64')); } catch (e) { console.log('ntlm:', e.message); }
const s5 = await kerberos.initializeServer('HTTP@sso.latchkey.test');
try { await s5.step('AAAA'); } catch (e) { console.log('garbage:', e.message); }
