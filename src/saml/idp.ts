import { createHash } from 'node:crypto';
import type { Origin } from '../audit/model.ts';
import type { AuditLog } from '../audit/record.ts';
import { clock } from '../clock.ts';
import type { Transaction } from '../db/transaction.ts';
import { sessionSid } from '../crypto/tokens.ts';
import type { SsoSession } from '../login/model.ts';
import type { SessionStore } from '../login/sessions.ts';
import type { User } from '../users/model.ts';
import { failureResponse, signOnResponse } from './assertion.ts';
import { idpMetadata } from './idp-metadata.ts';
import type { SamlKeys } from './idp-keys.ts';
import { logoutRequestUrl, logoutResponseUrl } from './logout.ts';
import { authenticated, checkDestination, decode, idAndTime, open, REQUEST_MAX_AGE_MS, CLOCK_SKEW_MS } from './messages.ts';
import type { SamlQueries } from './saml-queries.ts';
import type { NameIdFormat, Participant, ServiceProvider } from './model.ts';
import { samlRelease } from './release.ts';
import type { ServiceProviders } from './service-providers.ts';
import { BINDINGS, NAME_ID_FORMAT_URIS, nameIdFormatOf } from './sp-metadata.ts';
import { NS, onlyChild, SamlInputError, xsBoolean } from './xml.ts';

/** The NameID formats no other site can know: an unsigned LogoutRequest naming one may be believed. */
const UNGUESSABLE: ReadonlySet<NameIdFormat> = new Set(['persistent', 'transient']);

/** The IdP's endpoints, under PUBLIC_URL (docs/saml-applications.md). */
export const SAML_PATHS = { metadata: '/saml/v20/metadata', sso: '/saml/v20/sso', slo: '/saml/v20/slo' } as const;

/** An AuthnRequest that passed every check: what the response needs of it. */
export interface SignOnRequest {
  spId: string;
  /** Absent for IdP-initiated sign-on. */
  requestId?: string;
  acsUrl: string;
  forceAuthn: boolean;
  isPassive: boolean;
  /** The SP's registered format: a request may ask for it or for `unspecified`, and gets this. */
  nameIdFormat: NameIdFormat;
}

/** A checked request that is answered with an error status instead of an assertion (SAML Core 3.2.2.2). */
export interface SignOnRefusal {
  status: 'NoPassive' | 'InvalidNameIDPolicy';
  message: string;
}

/** What `readAuthnRequest` found: the SP, the request, and the refusal it gets at its ACS, if any. */
export interface CheckedAuthnRequest {
  sp: ServiceProvider;
  request: SignOnRequest;
  refusal?: SignOnRefusal;
}

/**
 * Where the response goes (SAML Core 3.4.1): the request's `AssertionConsumerServiceURL`, which must be
 * registered, or its `AssertionConsumerServiceIndex`, which must be one the SP's metadata declared;
 * neither, the SP's default (its metadata's `isDefault`, else the lowest index: the first stored).
 */
function acsUrlOf(root: Element, sp: ServiceProvider): string {
  const url = root.getAttribute('AssertionConsumerServiceURL') || undefined;
  const index = root.getAttribute('AssertionConsumerServiceIndex') || undefined;
  if (url !== undefined && index !== undefined)
    throw new SamlInputError('the AuthnRequest names both an AssertionConsumerServiceURL and an AssertionConsumerServiceIndex');
  if (url !== undefined) {
    if (!sp.assertionConsumerServiceUrls.includes(url))
      throw new SamlInputError(`${url} is not a registered AssertionConsumerServiceURL of ${sp.entityId}`);
    return url;
  }
  if (index !== undefined) {
    const at = /^\d{1,5}$/.test(index.trim())
      ? (sp.acsIndexes ?? sp.assertionConsumerServiceUrls.map((_, i) => i)).indexOf(Number(index.trim()))
      : -1;
    if (at < 0) throw new SamlInputError(`AssertionConsumerServiceIndex ${index.slice(0, 20)} is not an index of ${sp.entityId}`);
    return sp.assertionConsumerServiceUrls[at]!;
  }
  return sp.assertionConsumerServiceUrls[0]!;
}

/** A LogoutRequest from an SP, checked. */
export interface SpLogout {
  sp: ServiceProvider;
  requestId: string;
  /** The NameID it names (the one Latchkey gave it in the session). */
  nameId: string;
  /** Whether the SP signed it (always, for an SP with a signing certificate). */
  signed: boolean;
}

/** The raw query string of a request URL (the Redirect binding signs it as it was sent). */
export const queryOf = (originalUrl: string): string => {
  const at = originalUrl.indexOf('?');
  return at < 0 ? '' : originalUrl.slice(at + 1);
};

/** What a sign-on and a single logout change, with their audit events, in one transaction. */
interface SamlTransaction {
  queries: { saml: Pick<SamlQueries, 'addParticipant' | 'participants' | 'removeParticipants' | 'findById'> };
  sessions: Pick<SessionStore, 'end'>;
  audit: Pick<AuditLog, 'record'>;
}

/**
 * The SAML 2.0 identity provider's rules (docs/saml-applications.md), shared by the browser endpoints: checking the SP's
 * messages, each request ID used once, writing the signed responses, the SPs that took part in a
 * session, and the audit events of a sign-on and a single logout. The endpoints (src/web/saml/) run
 * the sign-in and send what this returns.
 */
export function samlIdp(deps: {
  providers: ServiceProviders;
  queries: SamlQueries;
  keys: SamlKeys;
  publicUrl: string;
  pairwiseKey: Buffer;
  transaction: Transaction<SamlTransaction>;
}) {
  const base = deps.publicUrl.replace(/\/$/, '');
  const issuer = `${base}${SAML_PATHS.metadata}`;
  const ssoUrl = `${base}${SAML_PATHS.sso}`;
  const sloUrl = `${base}${SAML_PATHS.slo}`;

  async function knownSp(entityId: string): Promise<ServiceProvider> {
    const sp = await deps.providers.find(entityId);
    if (!sp) throw new SamlInputError(`${entityId} is not a registered service provider`);
    return sp;
  }

  /** Each request ID once per SP, remembered past the time it could still be accepted. */
  async function useOnce(sp: ServiceProvider, id: string): Promise<void> {
    const hash = createHash('sha256').update(`${sp.id}\n${id}`).digest('hex');
    if (!(await deps.queries.useRequestId(hash, clock.now() + REQUEST_MAX_AGE_MS + 2 * CLOCK_SKEW_MS)))
      throw new SamlInputError(`the request ID ${id} was used before`);
  }

  /** A signed Response with an error status (SAML Core 3.2.2.2), base64 for the POST binding. */
  async function refusal(request: SignOnRequest, refused: SignOnRefusal): Promise<string> {
    const top = refused.status === 'NoPassive' ? 'Responder' : 'Requester';
    const xml = failureResponse(
      {
        issuer,
        destination: request.acsUrl,
        inResponseTo: request.requestId,
        now: clock.now(),
        status: top,
        second: refused.status,
        message: refused.message,
      },
      await deps.keys.signer(),
    );
    return Buffer.from(xml, 'utf8').toString('base64');
  }

  return {
    issuer,

    /** The PEM certificate of the key that signs now (for an SP's admin page). */
    signingCertificate: async (): Promise<string> => (await deps.keys.signer()).certificate,

    metadata: async (): Promise<string> => idpMetadata({ entityId: issuer, ssoUrl, sloUrl, certificates: await deps.keys.certificates() }),

    /**
     * An AuthnRequest by either binding: decoded within limits, its SP known, its signature checked
     * (required when the SP says so), its ACS URL one registered, fresh, its ID used once.
     */
    async readAuthnRequest(binding: 'redirect' | 'post', value: string, query: string): Promise<CheckedAuthnRequest> {
      const incoming = decode(binding, value, query);
      const { doc, issuer: spEntityId } = open(incoming, 'AuthnRequest');
      const sp = await knownSp(spEntityId);
      const root = authenticated(incoming, doc, sp, sp.wantAuthnRequestsSigned, 'SAMLRequest');
      const id = idAndTime(root);
      checkDestination(root, ssoUrl);
      const protocolBinding = root.getAttribute('ProtocolBinding');
      if (protocolBinding && protocolBinding !== BINDINGS.post)
        throw new SamlInputError('only the HTTP-POST binding is offered for the response');
      const acsUrl = acsUrlOf(root, sp);
      const policy = onlyChild(root, NS.protocol, 'NameIDPolicy');
      if (policy) xsBoolean(policy, 'AllowCreate'); // checked for its spelling; Latchkey's identifiers always exist
      const asked = policy?.getAttribute('Format') || undefined;
      const forceAuthn = xsBoolean(root, 'ForceAuthn');
      const isPassive = xsBoolean(root, 'IsPassive');
      await useOnce(sp, id);
      const request: SignOnRequest = { spId: sp.id, requestId: id, acsUrl, forceAuthn, isPassive, nameIdFormat: sp.nameIdFormat };
      // SAML Core 3.4.1.1: a format the IdP will not issue for this SP is answered with
      // InvalidNameIDPolicy. The SP's registered format is the only one it gets: an unsigned request
      // asking for `emailAddress` must not undo a pairwise persistent identifier.
      const refused = asked !== undefined && !asked.endsWith(':unspecified') && nameIdFormatOf(asked) !== sp.nameIdFormat;
      return {
        sp,
        request,
        ...(refused
          ? {
              refusal: {
                status: 'InvalidNameIDPolicy',
                message: `this service provider is given ${NAME_ID_FORMAT_URIS[sp.nameIdFormat]} identifiers only`,
              },
            }
          : {}),
      };
    },

    /** IdP-initiated sign-on (`?sp=<entityId>`), for an SP that allows it: to its first ACS URL. */
    async idpInitiated(entityId: string): Promise<{ sp: ServiceProvider; request: SignOnRequest }> {
      const sp = await knownSp(entityId);
      if (!sp.allowIdpInitiated) throw new SamlInputError(`${entityId} does not accept IdP-initiated sign-on`);
      return {
        sp,
        request: {
          spId: sp.id,
          acsUrl: sp.assertionConsumerServiceUrls[0]!,
          forceAuthn: false,
          isPassive: false,
          nameIdFormat: sp.nameIdFormat,
        },
      };
    },

    /** The SP of a request carried between the sign-in's pages (it may have been deleted meanwhile). */
    async spOf(request: SignOnRequest): Promise<ServiceProvider> {
      const sp = await deps.providers.findById(request.spId);
      if (!sp?.assertionConsumerServiceUrls.includes(request.acsUrl))
        throw new SamlInputError('the service provider of this sign-in is no longer registered');
      return sp;
    },

    /**
     * The signed Response for a signed-in user, base64 for the POST binding; the SP is noted as a
     * participant of the session, and the assertion audited (`saml.assertion_issued`), in one transaction.
     */
    async signOn(
      sp: ServiceProvider,
      request: SignOnRequest,
      signedIn: { session: SsoSession; user: User },
      origin: Origin,
    ): Promise<string> {
      const { session, user } = signedIn;
      const { nameId, nameIdFormat, attributes } = samlRelease(sp, user, deps.pairwiseKey, request.nameIdFormat);
      const xml = await signOnResponse(
        {
          issuer,
          sp,
          acsUrl: request.acsUrl,
          inResponseTo: request.requestId,
          nameId,
          nameIdFormat,
          attributes,
          authTime: session.authTime,
          amr: session.amr,
          sessionIndex: sessionSid(session.id),
          sessionExpiresAt: session.expiresAt,
          now: clock.now(),
        },
        await deps.keys.signer(),
      );
      await deps.transaction(async (tx) => {
        // The NameID given, transient ones too: single logout names the participant by it.
        await tx.queries.saml.addParticipant(session.id, { spId: sp.id, nameId, nameIdFormat }, session.expiresAt);
        await tx.audit.record({
          kind: 'saml.assertion_issued',
          userId: user.id,
          clientId: `saml:${sp.id}`,
          ip: origin.ip,
          requestId: origin.requestId,
          details: { entityId: sp.entityId, inResponseTo: request.requestId ?? null, idpInitiated: !request.requestId },
        });
      });
      return Buffer.from(xml, 'utf8').toString('base64');
    },

    /** A passive request of a browser that is not signed in: `NoPassive`, to the checked ACS URL. */
    noPassive: (request: SignOnRequest): Promise<string> => refusal(request, { status: 'NoPassive', message: 'the user is not signed in' }),

    /** A request answered with an error status rather than an assertion, to the checked ACS URL. */
    refusal,

    /** An SP's LogoutRequest (HTTP-Redirect): known SP, signed when it has a certificate, fresh, used once. */
    async readLogoutRequest(value: string, query: string): Promise<SpLogout> {
      const incoming = decode('redirect', value, query);
      const { doc, issuer: spEntityId } = open(incoming, 'LogoutRequest');
      const sp = await knownSp(spEntityId);
      if (!sp.singleLogoutServiceUrl) throw new SamlInputError(`${sp.entityId} has no SingleLogoutService to answer`);
      const root = authenticated(incoming, doc, sp, sp.signingCertificate !== null, 'SAMLRequest');
      const id = idAndTime(root);
      checkDestination(root, sloUrl);
      const nameId = onlyChild(root, NS.assertion, 'NameID')?.textContent?.trim();
      if (!nameId) throw new SamlInputError('the LogoutRequest has no NameID');
      await useOnce(sp, id);
      return { sp, requestId: id, nameId, signed: sp.signingCertificate !== null };
    },

    /** Another SP's LogoutResponse in the chain: who answered (its signature checked when it has a certificate). */
    async readLogoutResponse(value: string, query: string): Promise<ServiceProvider> {
      const incoming = decode('redirect', value, query);
      const { doc, issuer: spEntityId } = open(incoming, 'LogoutResponse');
      const sp = await knownSp(spEntityId);
      authenticated(incoming, doc, sp, sp.signingCertificate !== null, 'SAMLResponse');
      return sp;
    },

    /**
     * Whether the SP's LogoutRequest is about this session: the SP got an assertion in it, for the
     * NameID it names (the last one it was given, for a `transient` one). An unsigned request (from an
     * SP without a certificate) is anyone's link to the SLO endpoint: it counts only for a pairwise
     * `persistent` or a random `transient` NameID, which no other site can know; an email address, a
     * username or an attribute is guessed too easily to let it end someone's session.
     */
    async concerns(logout: SpLogout, sessionId: string): Promise<boolean> {
      return (await deps.queries.participants(sessionId)).some(
        (p) => p.spId === logout.sp.id && p.nameId === logout.nameId && (logout.signed || UNGUESSABLE.has(p.nameIdFormat)),
      );
    },

    /**
     * An SP's LogoutRequest about `session` (`concerns` said so): the session ends (session-ends.ts,
     * which queues back-channel logout for its OIDC clients) and the logout is audited
     * (`saml.logout`), in one transaction. Returns the session's other SPs that the browser tells
     * (those with an HTTP-Redirect SingleLogoutService), taken first with the SP that asked, which is
     * told by its LogoutResponse: the end then sends SOAP LogoutRequests only to the SPs left, those
     * with a SOAP URL alone (docs/saml-applications.md "Single logout by SOAP"). Each SP is told once.
     */
    async endSession(logout: SpLogout, session: Pick<SsoSession, 'id' | 'userId'>, origin: Origin): Promise<Participant[]> {
      return deps.transaction(async (tx) => {
        const others: Participant[] = [];
        for (const p of await tx.queries.saml.participants(session.id)) {
          if (p.spId !== logout.sp.id && (await tx.queries.saml.findById(p.spId))?.singleLogoutServiceUrl) others.push(p);
        }
        await tx.queries.saml.removeParticipants(session.id, [logout.sp.id, ...others.map((p) => p.spId)]);
        await tx.sessions.end(session.id);
        await tx.audit.record({
          kind: 'saml.logout',
          userId: session.userId,
          clientId: `saml:${logout.sp.id}`,
          ip: origin.ip,
          requestId: origin.requestId,
          details: { entityId: logout.sp.entityId, told: others.length },
        });
        return others;
      });
    },

    async logoutResponse(logout: Pick<SpLogout, 'sp' | 'requestId'>, relayState: string | undefined, success: boolean): Promise<string> {
      return logoutResponseUrl(
        { issuer, destination: logout.sp.singleLogoutServiceUrl!, inResponseTo: logout.requestId, relayState, now: clock.now(), success },
        await deps.keys.signer(),
      );
    },

    /** The URL that tells one participant of an ended session; undefined when it has no SingleLogoutService. */
    async logoutRequest(participant: Participant, sessionId: string, relayState: string): Promise<string | undefined> {
      const sp = await deps.providers.findById(participant.spId);
      if (!sp?.singleLogoutServiceUrl) return undefined;
      return logoutRequestUrl(
        { issuer, destination: sp.singleLogoutServiceUrl, participant, sessionIndex: sessionSid(sessionId), relayState, now: clock.now() },
        await deps.keys.signer(),
      ).url;
    },
  };
}

export type SamlIdp = ReturnType<typeof samlIdp>;
