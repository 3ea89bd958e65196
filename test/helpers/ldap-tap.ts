import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP relay in front of a plain ldap:// server that notes the DN of every bind request passing
 * through it: what the directory was asked, seen from outside Latchkey. Point the backend's `url` at
 * `url`.
 */
export interface LdapTap {
  url: string;
  /** The DN of each bind request, in order. */
  binds: string[];
  close(): Promise<void>;
}

/** A BER length at `at`: the length and where the contents start; undefined if not all there yet. */
function berLength(buf: Buffer, at: number): { length: number; start: number } | undefined {
  if (at >= buf.length) return undefined;
  const first = buf[at]!;
  if (first < 0x80) return { length: first, start: at + 1 };
  const n = first & 0x7f;
  if (at + 1 + n > buf.length) return undefined;
  let length = 0;
  for (let i = 0; i < n; i++) length = length * 256 + buf[at + 1 + i]!;
  return { length, start: at + 1 + n };
}

/** Reads the complete LDAPMessages at the start of `buf`; returns what is left for the next chunk. */
function readMessages(buf: Buffer, onBind: (dn: string) => void): Buffer {
  let at = 0;
  for (;;) {
    const message = berLength(buf, at + 1); // after the SEQUENCE tag
    if (!message || message.start + message.length > buf.length) break;
    const body = buf.subarray(message.start, message.start + message.length);
    const id = berLength(body, 1)!; // messageID INTEGER
    const op = id.start + id.length;
    if (body[op] === 0x60) {
      // BindRequest ::= [APPLICATION 0] SEQUENCE { version INTEGER, name LDAPDN, authentication }
      const bind = berLength(body, op + 1)!;
      const version = berLength(body, bind.start + 1)!;
      const name = berLength(body, version.start + version.length + 1)!;
      onBind(body.subarray(name.start, name.start + name.length).toString('utf8'));
    }
    at = message.start + message.length;
  }
  return buf.subarray(at);
}

export async function ldapTap(target: string): Promise<LdapTap> {
  const { hostname, port } = new URL(target);
  const binds: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    let pending: Buffer = Buffer.alloc(0);
    client.on('data', (chunk) => {
      pending = readMessages(Buffer.concat([pending, chunk]), (dn) => binds.push(dn));
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: tapPort } = server.address() as { port: number };
  return {
    url: `ldap://127.0.0.1:${tapPort}`,
    binds,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
