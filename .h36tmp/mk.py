import kerberos, sys
rc, ctx = kerberos.authGSSClientInit(sys.argv[1] if len(sys.argv) > 1 else 'HTTP@sso.latchkey.test', mech_oid=kerberos.GSS_MECH_OID_SPNEGO)
kerberos.authGSSClientStep(ctx, '')
print(kerberos.authGSSClientResponse(ctx))
