import { BlockList, isIP } from 'node:net';

/**
 * Which addresses Latchkey refuses to call (docs/decisions.md "Outbound fetches"). Enterprise applications live
 * on private networks, so private and loopback addresses stay allowed; what is refused always is
 * where nothing legitimate listens but a cloud's metadata service may (169.254.169.254 hands out the
 * machine's credentials) or where a connection lands on this host unannounced (0.0.0.0, `::`).
 */
const ALWAYS_REFUSED: Array<[network: string, prefix: number, family: 'ipv4' | 'ipv6', kind: 'link-local' | 'unspecified' | 'metadata']> = [
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['::', 128, 'ipv6', 'unspecified'],
  // NAT64's well-known prefix reaches the same IPv4 addresses through a gateway.
  ['64:ff9b::a9fe:0', 112, 'ipv6', 'link-local'],
  ['64:ff9b::', 104, 'ipv6', 'unspecified'],
  // Clouds' metadata services outside the link-local range: AWS's IPv6 one, Alibaba Cloud's.
  ['fd00:ec2::254', 128, 'ipv6', 'metadata'],
  ['100.100.100.200', 32, 'ipv4', 'metadata'],
];
// IPv4-mapped IPv6 forms (::ffff:169.254.169.254) need no rules of their own: a BlockList matches
// them against the IPv4 rules (test/security/outbound.test.ts checks it).

export interface AddressRules {
  /** Why `address` (an IP literal, no brackets) is refused, or undefined when it may be called. */
  refusal(address: string): string | undefined;
}

/** A network as config writes it: `10.0.0.0/8`, `fd00::/8`, or one address. Undefined when malformed. */
export function parseNetwork(text: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | undefined {
  const [address = '', bits, extra] = text.trim().split('/');
  const version = isIP(address);
  if (!version || extra !== undefined) return undefined;
  const max = version === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return undefined;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/** The refused addresses: the built-in ones plus config `outbound.denyNetworks` (already validated). */
export function addressRules(denyNetworks: readonly string[] = []): AddressRules {
  const lists = ALWAYS_REFUSED.map(([network, prefix, family, kind]) => {
    const list = new BlockList();
    list.addSubnet(network, prefix, family);
    return {
      list,
      why:
        kind === 'link-local'
          ? 'a link-local address'
          : kind === 'metadata'
            ? "a cloud metadata service's address"
            : 'an unspecified address',
    };
  });
  const denied = new BlockList();
  for (const text of denyNetworks) {
    const network = parseNetwork(text);
    if (!network) throw new TypeError(`outbound.denyNetworks: ${JSON.stringify(text)} is not a network`);
    denied.addSubnet(network.address, network.prefix, network.family);
  }
  lists.push({ list: denied, why: 'in outbound.denyNetworks' });
  return {
    refusal(address) {
      const version = isIP(address);
      if (!version) return undefined;
      const family = version === 4 ? 'ipv4' : 'ipv6';
      return lists.find(({ list }) => list.check(address, family))?.why;
    },
  };
}
