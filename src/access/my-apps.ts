import type { Client } from '../clients/model.ts';
import type { ServiceProvider } from '../saml/model.ts';
import { launchUrl, samlLaunchUrl } from './launch.ts';
import { decideAccess } from './policy.ts';
import { memberOf, type ReleasedUser } from './release.ts';

/** One line of "My applications" (docs/access-and-claims.md "My applications"): what the user taps, and where it goes. */
export interface MyApp {
  kind: 'client' | 'saml';
  /** The client id, or the SP's entity ID. */
  id: string;
  name: string;
  launchUrl: string;
}

/** A client's launch URL, for a client that can sign a browser in (browser sign-on and OAuth on). */
const clientLaunchUrl = (c: Client, issuer: string): string | null =>
  c.ssoEnabled && c.oauthEnabled ? launchUrl(c.initiateLoginUri, issuer) : null;

/**
 * "My applications" (docs/access-and-claims.md "My applications"): the applications a user may use,
 * by their access policies, that can be started from Latchkey. A read: nothing is recorded.
 */
export function myApps(deps: {
  clients: () => Promise<Client[]>;
  serviceProviders: () => Promise<ServiceProvider[]>;
  /** PUBLIC_URL: the issuer, and the base of the IdP-initiated URL. */
  publicUrl: string;
}) {
  return {
    /** The user's applications, by name. */
    async of(user: ReleasedUser): Promise<MyApp[]> {
      const member = memberOf(user);
      const [clients, sps] = await Promise.all([deps.clients(), deps.serviceProviders()]);
      const apps: MyApp[] = [];
      for (const c of clients) {
        const url = clientLaunchUrl(c, deps.publicUrl);
        if (url && decideAccess(c.access, member).allowed) apps.push({ kind: 'client', id: c.clientId, name: c.name, launchUrl: url });
      }
      for (const sp of sps) {
        const url = samlLaunchUrl(sp, deps.publicUrl);
        if (url && decideAccess(sp.access, member).allowed) apps.push({ kind: 'saml', id: sp.entityId, name: sp.name, launchUrl: url });
      }
      return apps.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
    },
  };
}

export type MyApps = ReturnType<typeof myApps>;
