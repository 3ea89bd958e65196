import { lookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { AddressRules } from './address-rules.ts';
import { OutboundError } from './outbound-error.ts';

/**
 * The DNS lookup of every outbound connection: a host name is checked against the rules as it is
 * resolved, for the very connection that uses the answer, so a name that points (or is re-pointed,
 * DNS rebinding) at 169.254.169.254 is refused at connect time. A name with any refused address is
 * refused as a whole: it is not the name of an application.
 */
export function guardedLookup(rules: AddressRules): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { family: options.family, hints: options.hints, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '');
      if (addresses.length === 0 || addresses.some((a) => rules.refusal(a.address))) {
        return callback(new OutboundError('refused', 'refused address'), '');
      }
      // Node asks for every address when it races IPv4 and IPv6 (autoSelectFamily), else for one.
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}
