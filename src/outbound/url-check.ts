import { isIP } from 'node:net';
import type { AddressRules } from './address-rules.ts';

/** The host of a URL as an address to check: IPv6 without its brackets. */
export const bareHost = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Why Latchkey will not call `url`, known without a DNS lookup: not http(s), or an IP-literal host in
 * a refused network. Checked when a URL is registered, so that an administrator learns it at once;
 * a host name is checked each time it is resolved (guarded-lookup.ts), as its addresses may change.
 * The URL parser has already turned `http://2852039166/` and `http://0/` into dotted addresses.
 */
export function urlRefusal(url: URL, rules: AddressRules): string | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'only http and https are called';
  const host = bareHost(url);
  if (!isIP(host)) return undefined;
  const why = rules.refusal(host);
  return why && `${host} is ${why}: Latchkey never calls it`;
}
