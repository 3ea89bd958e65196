import { DOMParser } from '@xmldom/xmldom';
import express from 'express';
import type { Server } from 'node:http';
import { SignedXml } from 'xml-crypto';
import { freePort } from './ports.ts';

const SOAP_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
const PROTOCOL = 'urn:oasis:names:tc:SAML:2.0:protocol';
const ASSERTION = 'urn:oasis:names:tc:SAML:2.0:assertion';
const DSIG = 'http://www.w3.org/2000/09/xmldsig#';

/** A LogoutRequest an SP received by SOAP, read and its signature checked with the IdP's certificate. */
export interface SoapLogoutRequest {
  /** The path's last segment: which SP of the test it was sent to. */
  sp: string;
  contentType: string;
  soapAction: string;
  id: string;
  issuer: string;
  destination: string;
  notOnOrAfter: string;
  nameId: string;
  nameIdFormat: string;
  sessionIndex: string;
  /** The enveloped signature verified against the IdP certificate, its one reference the request's ID. */
  signatureValid: boolean;
}

/** How an SP endpoint answers: a Success LogoutResponse, a SOAP fault with HTTP 500 once then Success, or always. */
export type SoapMode = 'ok' | 'fault-once' | 'fault';

/** Words in the faults an SP sends: the IdP must never repeat them. */
export const FAULT_WORDS = 'internal-detail-of-the-sp';

function textOf(parent: Element, ns: string, local: string): Element | undefined {
  return (parent.getElementsByTagNameNS(ns, local)[0] as Element | undefined) ?? undefined;
}

/**
 * The SOAP SingleLogoutService of test SPs (SAML bindings 3.2), one server for many: `url(name)` is an
 * SP's endpoint. It records every request (checking the signature with the IdP's certificate, as an
 * SP does) and answers as its mode says.
 */
export class SoapReceiver {
  readonly received: SoapLogoutRequest[] = [];
  readonly modes = new Map<string, SoapMode>();
  private server?: Server;

  private constructor(
    readonly port: number,
    private readonly idpCert: () => string,
  ) {}

  static async start(idpCert: () => string): Promise<SoapReceiver> {
    const r = new SoapReceiver(await freePort(), idpCert);
    const app = express();
    app.post('/soap/:sp', express.text({ type: '*/*', limit: '256kb' }), (req, res) => r.answer(req, res));
    await new Promise<void>((resolve) => {
      r.server = app.listen(r.port, '127.0.0.1', () => resolve());
    });
    return r;
  }

  url(sp: string): string {
    return `http://127.0.0.1:${this.port}/soap/${sp}`;
  }

  to(sp: string): SoapLogoutRequest[] {
    return this.received.filter((r) => r.sp === sp);
  }

  private answer(req: express.Request, res: express.Response): void {
    const sp = String(req.params.sp);
    const xml = String(req.body);
    const doc = new DOMParser().parseFromString(xml, 'text/xml') as unknown as Document;
    const request = textOf(doc.documentElement, PROTOCOL, 'LogoutRequest')!;
    const nameId = textOf(request, ASSERTION, 'NameID')!;
    const id = request.getAttribute('ID') ?? '';
    let signatureValid = false;
    try {
      const sig = new SignedXml({ publicCert: this.idpCert(), getCertFromKeyInfo: () => null });
      sig.loadSignature(textOf(request, DSIG, 'Signature')!);
      signatureValid = sig.checkSignature(xml) && sig.getReferences().length === 1 && sig.getReferences()[0]!.uri === `#${id}`;
    } catch {
      signatureValid = false;
    }
    this.received.push({
      sp,
      contentType: String(req.headers['content-type']),
      soapAction: String(req.headers.soapaction),
      id,
      issuer: textOf(request, ASSERTION, 'Issuer')?.textContent ?? '',
      destination: request.getAttribute('Destination') ?? '',
      notOnOrAfter: request.getAttribute('NotOnOrAfter') ?? '',
      nameId: nameId.textContent ?? '',
      nameIdFormat: nameId.getAttribute('Format') ?? '',
      sessionIndex: textOf(request, PROTOCOL, 'SessionIndex')?.textContent ?? '',
      signatureValid,
    });
    const mode = this.modes.get(sp) ?? 'ok';
    if (mode === 'fault-once') this.modes.set(sp, 'ok');
    if (mode !== 'ok') {
      res
        .status(500)
        .type('text/xml')
        .send(
          `<soap:Envelope xmlns:soap="${SOAP_ENV}"><soap:Body><soap:Fault><faultcode>soap:Server</faultcode><faultstring>${FAULT_WORDS}</faultstring></soap:Fault></soap:Body></soap:Envelope>`,
        );
      return;
    }
    res
      .type('text/xml')
      .send(
        `<soap:Envelope xmlns:soap="${SOAP_ENV}"><soap:Body>` +
          `<samlp:LogoutResponse xmlns:samlp="${PROTOCOL}" xmlns:saml="${ASSERTION}" ID="_r${id}" Version="2.0" IssueInstant="${new Date().toISOString()}" InResponseTo="${id}">` +
          `<saml:Issuer>${sp}</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
          `</samlp:LogoutResponse></soap:Body></soap:Envelope>`,
      );
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
