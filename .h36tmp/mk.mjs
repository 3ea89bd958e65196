import kerberos from 'kerberos';
const client = await kerberos.initializeClient(process.argv[2] ?? 'HTTP@sso.latchkey.test', { mechOID: kerberos.GSS_MECH_OID_SPNEGO });
console.log(await client.step(''));
