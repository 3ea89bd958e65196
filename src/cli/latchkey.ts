import { parseArgs } from 'node:util';
import pino from 'pino';
import { AUTH_METHODS, type AuthMethod, type GrantType } from '../clients/model.ts';
import { CLI_ACTOR } from '../audit/record.ts';
import { loadConfig } from '../config/load.ts';
import type { AppContext } from '../context.ts';
import { createContext } from '../services.ts';
import { connect, migrate } from '../db/connect.ts';
import { InputError, NotFoundError } from '../errors/service.ts';
import type { ErrorCodeStyle } from '../errors/oauth.ts';

const usage = `usage: npm run latchkey -- <command> [options]

  client create --name NAME --redirect-uri URI [--redirect-uri URI…] [--grant authorization_code|password|refresh_token|client_credentials|urn:ietf:params:oauth:grant-type:device_code …]
                [--scope SCOPE …] [--public] [--require-consent] [--require-mfa] [--allow-plain-pkce] [--role ROLE …] [--client-id ID]
                [--web-origin ORIGIN …]   (default: the redirect URIs' origins)
                [--error-codes maxkey|rfc6749] [--default-audience URI]
                [--token-endpoint-auth-method client_secret_basic|client_secret_post|client_secret_jwt|private_key_jwt|none]
                [--jwks JSON | --jwks-uri URL]   (the public keys of a private_key_jwt client)
                [--web-origin ORIGIN …]   (default: the redirect URIs' origins) [--backchannel-logout-uri URI]
  client list
  client delete --client-id ID
  user create --username NAME --password PASSWORD [--email EMAIL] [--display-name NAME] [--role ROLE …]
  purge        deletes expired codes, tokens, sessions, throttle rows and old audit events now
               (one pass of the periodic retention purge) and prints the rows deleted per table
  sync BACKEND [--allow-mass-leave]
               one directory sync pass of BACKEND now (docs/directory-sync.md) and prints its counts; exits 1
               when it was refused (it would deprovision more than maxLeaverShare) or failed. --allow-mass-leave
               applies a refused pass, after a human has checked the directory

Prints JSON. A client's secret is shown once, at creation.`;

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    'web-origin': { type: 'string', multiple: true },
    'backchannel-logout-uri': { type: 'string' },
    grant: { type: 'string', multiple: true },
    scope: { type: 'string', multiple: true },
    role: { type: 'string', multiple: true },
    public: { type: 'boolean' },
    'require-consent': { type: 'boolean' },
    'require-mfa': { type: 'boolean' },
    'allow-plain-pkce': { type: 'boolean' },
    'allow-mass-leave': { type: 'boolean' },
    'error-codes': { type: 'string' },
    'default-audience': { type: 'string' },
    'client-id': { type: 'string' },
    'token-endpoint-auth-method': { type: 'string' },
    jwks: { type: 'string' },
    'jwks-uri': { type: 'string' },
    username: { type: 'string' },
    password: { type: 'string' },
    email: { type: 'string' },
    'display-name': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});

const [noun, verb] = positionals;
if (values.help || !noun || (!verb && noun !== 'purge')) {
  process.stdout.write(`${usage}\n`);
  process.exit(values.help ? 0 : 2);
}

function authMethod(value: string | undefined): AuthMethod | undefined {
  if (value === undefined) return undefined;
  if (!(AUTH_METHODS as readonly string[]).includes(value))
    throw new InputError('tokenEndpointAuthMethod', `must be one of ${AUTH_METHODS.join(', ')}`);
  return value as AuthMethod;
}

const config = loadConfig();
// Log lines go to stderr: stdout is the command's JSON (a refused directory sync logs an error).
const logger = pino({ level: 'error' }, pino.destination(2));
const database = connect(config.databaseUrl);
const print = (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);

let ctx: AppContext | undefined;
try {
  await migrate(database);
  ctx = await createContext(config, database, logger);
  const command = verb ? `${noun} ${verb}` : noun;
  if (command === 'purge') {
    print({ deleted: await ctx.retention.purgeNow() });
  } else if (noun === 'sync') {
    const result = await ctx.directorySync.run(verb ?? '', { allowMassLeave: values['allow-mass-leave'] ?? false });
    print({ ...result, at: new Date(result.at).toISOString() });
    if (result.outcome !== 'applied') {
      process.stderr.write(`latchkey: the sync of ${result.backend} was ${result.outcome}: ${result.error}\n`);
      process.exitCode = 1;
    }
  } else if (command === 'client create') {
    const { client, clientSecret } = await ctx.clients.register(
      {
        name: values.name ?? '',
        redirectUris: values['redirect-uri'] ?? [],
        grantTypes: values.grant as GrantType[] | undefined,
        scopes: values.scope,
        roles: values.role,
        confidential: !values.public,
        requireConsent: values['require-consent'] ?? false,
        requireMfa: values['require-mfa'] ?? false,
        allowPlainPkce: values['allow-plain-pkce'] ?? false,
        clientId: values['client-id'],
        webOrigins: values['web-origin'],
        // Checked by the client service, like every field (an unknown style is an input error).
        errorCodes: values['error-codes'] as ErrorCodeStyle | undefined,
        defaultAudience: values['default-audience'],
        tokenEndpointAuthMethod: authMethod(values['token-endpoint-auth-method']),
        jwks: values.jwks,
        jwksUri: values['jwks-uri'],
        backchannelLogoutUri: values['backchannel-logout-uri'],
      },
      CLI_ACTOR,
    );
    const { secretHash: _hidden, secretEnc: _sealed, ...shown } = client;
    print({ ...shown, webOrigins: ctx.clients.webOrigins(client), clientSecret });
  } else if (command === 'client list') {
    const clients = ctx.clients;
    print((await clients.list()).map(({ secretHash: _hidden, secretEnc: _sealed, ...c }) => ({ ...c, webOrigins: clients.webOrigins(c) })));
  } else if (command === 'client delete') {
    print({ deleted: await ctx.clients.remove(values['client-id'] ?? '', CLI_ACTOR) });
  } else if (command === 'user create') {
    const user = await ctx.users.create(
      {
        username: values.username ?? '',
        password: values.password ?? '',
        email: values.email,
        displayName: values['display-name'],
        roles: values.role,
      },
      CLI_ACTOR,
    );
    const { passwordHash: _hidden, ...shown } = user;
    print(shown);
  } else {
    process.stderr.write(`unknown command: ${command}\n${usage}\n`);
    process.exitCode = 2;
  }
} catch (err) {
  if (err instanceof InputError || err instanceof NotFoundError) {
    process.stderr.write(`latchkey: ${err.message}\n`);
    process.exitCode = 2;
  } else throw err;
} finally {
  await ctx?.identity.close();
  await database.knex.destroy();
}
