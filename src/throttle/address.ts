import { isIPv6 } from 'node:net';

/**
 * The network an address is counted under: an IPv4 address as it is (an IPv4-mapped IPv6 address
 * too), an IPv6 address by its /64, the smallest block one subscriber is given (RFC 6177): counting
 * single IPv6 addresses would hand a guesser 2^64 fresh counts.
 */
export function addressOf(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.replace(/%.*$/, '').toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  // An embedded IPv4 tail (::1.2.3.4) sits in the low 64 bits, which are dropped anyway.
  const groups = ip.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
