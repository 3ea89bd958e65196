import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import * as x509 from '@peculiar/x509';
import { SAML, ValidateInResponseTo, type Profile, type SamlConfig } from '@node-saml/node-saml';
import { freePort } from './ports.ts';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

/** An RSA key and a self-signed certificate for it, both PEM: what an SP signs or decrypts with. */
export async function keyAndCertificate(cn: string): Promise<{ key: string; cert: string }> {
  const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: `CN=${cn}`,
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 86_400_000 * 365),
    signingAlgorithm: alg,
    keys,
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  return {
    key: `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`,
    cert: cert.toString('pem'),
  };
}

export interface SpOptions {
  idpUrl: string;
  idpCert: string;
  /** Sign AuthnRequests and LogoutRequests (wantAuthnRequestsSigned on Latchkey's side). */
  signRequests?: boolean;
  /** Give an encryption certificate and decrypt with its key. */
  encryption?: boolean;
  binding?: 'HTTP-Redirect' | 'HTTP-POST';
  wantAuthnResponseSigned?: boolean;
  identifierFormat?: string;
}

/** What the SP's ACS said: the profile node-saml validated, or its refusal. */
export interface AcsAnswer {
  ok: boolean;
  error?: string;
  relayState?: string;
  profile?: Profile;
}

export interface TestSp {
  url: string;
  entityId: string;
  acsUrl: string;
  sloUrl: string;
  saml: SAML;
  /** Its own metadata (node-saml's generateServiceProviderMetadata), for registration. */
  metadataXml: string;
  signing: { key: string; cert: string };
  stop(): Promise<void>;
}

/**
 * A SAML service provider as applications run one: `@node-saml/node-saml` (passport-saml's core) in a
 * small Express app. `/login` and `/login-post` start a sign-on by either binding, `/acs` validates the
 * Response with node-saml's own `validatePostResponseAsync` (signature, audience, InResponseTo, times)
 * and answers JSON, `/logout` starts an SP-initiated logout for the last profile, `/slo` answers the
 * IdP's LogoutRequests (the chain) and takes its LogoutResponses.
 */
export async function startSamlSp(o: SpOptions): Promise<TestSp> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const entityId = `${url}/metadata`;
  const signing = await keyAndCertificate('node-saml SP signing');
  const decryption = o.encryption ? await keyAndCertificate('node-saml SP encryption') : undefined;
  const config: SamlConfig = {
    issuer: entityId,
    callbackUrl: `${url}/acs`,
    logoutCallbackUrl: `${url}/slo`,
    entryPoint: `${o.idpUrl}/saml/v20/sso`,
    logoutUrl: `${o.idpUrl}/saml/v20/slo`,
    idpCert: o.idpCert,
    audience: entityId,
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: o.wantAuthnResponseSigned ?? false,
    signatureAlgorithm: 'sha256',
    digestAlgorithm: 'sha256',
    privateKey: o.signRequests ? signing.key : undefined,
    decryptionPvk: decryption?.key,
    authnRequestBinding: o.binding ?? 'HTTP-Redirect',
    validateInResponseTo: ValidateInResponseTo.ifPresent,
    identifierFormat: o.identifierFormat ?? 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
    disableRequestedAuthnContext: true,
  };
  const saml = new SAML(config);
  const metadataXml = saml.generateServiceProviderMetadata(decryption?.cert ?? null, o.signRequests ? signing.cert : null);
  let last: Profile | undefined;

  const app = express();
  app.use(express.urlencoded({ extended: false, limit: '1mb' }));
  app.get('/login', async (req, res) => {
    res.redirect(302, await saml.getAuthorizeUrlAsync(String(req.query.relay ?? ''), undefined, {}));
  });
  app.get('/login-post', async (req, res) => {
    res.type('html').send(await saml.getAuthorizeFormAsync(String(req.query.relay ?? '')));
  });
  app.post('/acs', async (req, res) => {
    try {
      const { profile } = await saml.validatePostResponseAsync(req.body as Record<string, string>);
      last = profile ?? undefined;
      res.json({ ok: true, profile, relayState: req.body.RelayState });
    } catch (err) {
      res.status(401).json({ ok: false, error: (err as Error).message });
    }
  });
  app.get('/logout', async (req, res) => {
    res.redirect(302, await saml.getLogoutUrlAsync(last!, String(req.query.relay ?? ''), {}));
  });
  app.get('/slo', async (req, res) => {
    try {
      const originalQuery = req.originalUrl.slice(req.originalUrl.indexOf('?') + 1);
      const { profile, loggedOut } = await saml.validateRedirectAsync(req.query, originalQuery);
      if (req.query.SAMLRequest) {
        // The IdP tells this SP its session ended: it answers, and the chain goes on.
        last = undefined;
        return res.redirect(302, await saml.getLogoutResponseUrlAsync(profile!, String(req.query.RelayState ?? ''), {}, true));
      }
      res.json({ ok: true, loggedOut, relayState: req.query.RelayState });
    } catch (err) {
      res.status(401).json({ ok: false, error: (err as Error).message });
    }
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  return {
    url,
    entityId,
    acsUrl: `${url}/acs`,
    sloUrl: `${url}/slo`,
    saml,
    metadataXml,
    signing,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
