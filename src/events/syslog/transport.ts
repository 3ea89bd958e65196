import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';

/** Where the messages go: `tcp://host[:514]` or `tls://host[:6514]` (RFC 5425's port). */
export interface SyslogTarget {
  protocol: 'tcp' | 'tls';
  host: string;
  port: number;
  /** For `tls`: the CA, a client certificate and key, whether an unknown certificate is refused. */
  tls?: Pick<ConnectionOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername'>;
}

/** Undefined when `url` is not `tcp://host[:port]` or `tls://host[:port]` (config validates with it). */
export function parseSyslogUrl(url: string): Pick<SyslogTarget, 'protocol' | 'host' | 'port'> | undefined {
  const m = /^(tcp|tls):\/\/(\[[0-9a-f:.]+\]|[^/:[\]\s]+)(?::(\d{1,5}))?\/?$/i.exec(url.trim());
  if (!m) return undefined;
  const protocol = m[1]!.toLowerCase() as 'tcp' | 'tls';
  const port = m[3] ? Number(m[3]) : protocol === 'tls' ? 6514 : 514;
  if (port < 1 || port > 65535) return undefined;
  return { protocol, host: m[2]!.replace(/^\[|\]$/g, ''), port };
}

/** RFC 6587 octet counting (and RFC 5425, the same): `MSG-LEN SP SYSLOG-MSG`, the length in bytes. */
export const frame = (message: string): string => `${Buffer.byteLength(message)} ${message}`;

/** One open connection to the receiver. */
export interface SyslogSocket {
  /** Resolves once the bytes are handed to the operating system; rejects when the connection is gone. */
  write(messages: readonly string[]): Promise<void>;
  /** False from the moment the connection closed or failed, whichever side ended it. */
  readonly open: boolean;
  /** Called once, when the connection closes or fails after it was opened. */
  onClose(listener: (reason: string) => void): void;
  /**
   * Half-closes and waits for the receiver to close its side: it does so only after reading all that
   * was sent, so `true` means every byte reached the receiver's process. False on a timeout or an error.
   */
  finish(timeoutMs: number): Promise<boolean>;
  destroy(): void;
}

/** The words for a failed connection: the system's error code, never more of what the peer said. */
export const reasonOf = (err: unknown): string => {
  const e = err as NodeJS.ErrnoException & { reason?: string };
  return e.code ?? e.reason ?? (err instanceof Error ? err.message : String(err));
};

/** Opens a connection (TCP, or TLS with its handshake done) within `timeoutMs`. */
export function openSyslog(target: SyslogTarget, timeoutMs: number): Promise<SyslogSocket> {
  return new Promise((resolve, reject) => {
    const { host, port } = target;
    const socket: Socket =
      target.protocol === 'tls'
        ? tlsConnect({ host, port, servername: /^[\d.]+$|:/.test(host) ? undefined : host, ...target.tls })
        : tcpConnect({ host, port });
    const ready = target.protocol === 'tls' ? 'secureConnect' : 'connect';
    const timer = setTimeout(() => socket.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), timeoutMs);
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.once(ready, () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 30_000);
      resolve(wrap(socket));
    });
  });
}

function wrap(socket: Socket): SyslogSocket {
  let open = true;
  let closeReason = 'closed';
  const listeners: Array<(reason: string) => void> = [];
  // A syslog receiver sends nothing; what arrives is read and dropped, and its end is the receiver leaving.
  socket.on('data', () => undefined);
  socket.on('end', () => {
    closeReason = 'closed by the receiver';
    socket.end();
  });
  socket.on('error', (err) => {
    closeReason = reasonOf(err);
  });
  socket.on('close', () => {
    open = false;
    for (const l of listeners.splice(0)) l(closeReason);
  });

  return {
    get open() {
      return open;
    },
    write(messages) {
      if (!open || socket.writableEnded) return Promise.reject(new Error(closeReason));
      return new Promise((resolve, reject) => {
        socket.write(messages.map(frame).join(''), (err) => (err ? reject(err) : resolve()));
      });
    },
    onClose(listener) {
      if (open) listeners.push(listener);
      else listener(closeReason);
    },
    finish(timeoutMs) {
      if (!open) return Promise.resolve(false);
      return new Promise((resolve) => {
        let received = false;
        const timer = setTimeout(() => {
          socket.destroy();
          resolve(false);
        }, timeoutMs);
        socket.once('end', () => {
          received = true;
        });
        socket.once('close', (hadError) => {
          clearTimeout(timer);
          resolve(received && !hadError);
        });
        socket.end();
      });
    },
    destroy() {
      socket.destroy();
    },
  };
}
