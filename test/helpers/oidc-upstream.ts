import express from 'express';
import type { Server } from 'node:http';
import Provider from 'oidc-provider';
import { escapeHtml } from '../../src/web/pages/layout.ts';
import { freePort } from './ports.ts';

/** An account of the upstream: its claims, and the `amr` its sign-in reports. */
export interface UpstreamAccount {
  sub: string;
  preferred_username?: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  groups?: string[];
  amr?: string[];
}

export interface OidcUpstream {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Accounts by `sub`; a test may change one (a rename) between sign-ins. */
  accounts: Map<string, UpstreamAccount>;
  stop(): Promise<void>;
}

/**
 * node-oidc-provider 9 as an upstream identity provider, in the test process, with a login of its own:
 * its interaction page is a form with one field (`login`, the account's `sub`: no password, it is the
 * upstream's business), which signs that account in and grants the scopes asked. One confidential
 * client (`client_secret_post`) whose redirect URIs the test gives.
 */
export async function startOidcUpstream(redirectUris: string[]): Promise<OidcUpstream> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const accounts = new Map<string, UpstreamAccount>();
  const clientId = 'latchkey-downstream';
  const clientSecret = 'upstream-client-secret-0123456789';
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        token_endpoint_auth_method: 'client_secret_post',
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub', 'amr'], profile: ['name', 'preferred_username'], email: ['email', 'email_verified'], groups: ['groups'] },
    scopes: ['openid', 'profile', 'email', 'groups'],
    features: { devInteractions: { enabled: false } },
    cookies: { keys: ['upstream-test-cookie-key-upstream-test-cookie-key'] },
    async findAccount(_ctx, id) {
      const account = accounts.get(id);
      if (!account) return undefined;
      // The account's `amr` is its sign-in's (the login result below), not a claim of its own.
      const { amr: _amr, ...claims } = account;
      return { accountId: id, claims: () => claims };
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  });

  const app = express();
  app.get('/interaction/:uid', async (req, res, next) => {
    try {
      const details = await provider.interactionDetails(req, res);
      res.type('html').send(`<!doctype html><title>Upstream sign-in</title><h1>Upstream IdP</h1>
<form method="post" action="/interaction/${escapeHtml(details.uid)}"><label for="login">Account</label><input id="login" name="login"><button type="submit">Sign in at the upstream</button></form>`);
    } catch (err) {
      next(err);
    }
  });
  app.post('/interaction/:uid', express.urlencoded({ extended: false }), async (req, res, next) => {
    try {
      const details = await provider.interactionDetails(req, res);
      const accountId = String(req.body.login ?? '');
      const account = accounts.get(accountId);
      if (!account) return void res.status(401).type('html').send('unknown account');
      const grant = new provider.Grant({ accountId, clientId: String(details.params.client_id) });
      grant.addOIDCScope(String(details.params.scope));
      const grantId = await grant.save();
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId, amr: account.amr ?? ['pwd'] }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      );
    } catch (err) {
      next(err);
    }
  });
  app.use(provider.callback());
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
