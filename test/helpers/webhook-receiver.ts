import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { freePort } from './ports.ts';

/** A message a receiver verified: the Standard Webhooks payload Latchkey sends. */
export interface ReceivedMessage {
  id: string;
  type: string;
  timestamp: string;
  data: {
    id: string;
    at: string;
    kind: string;
    userId: string | null;
    clientId: string | null;
    details: Record<string, unknown> | null;
  } & Record<string, unknown>;
}

/**
 * A webhook endpoint for tests, as an application would write one: it verifies every request's
 * signature with the `standardwebhooks` library (the secret set once registration showed it) and
 * keeps what it verified. It can answer 500 to its first requests, or hold every request unanswered.
 */
export class WebhookReceiver {
  /** Verified messages, in the order they were accepted (200). */
  readonly accepted: ReceivedMessage[] = [];
  /** Every request's `webhook-id`, in arrival order, answered or not. */
  readonly arrivals: string[] = [];
  /** When each of them arrived (Date.now()). */
  readonly arrivedAt: number[] = [];
  /** Requests whose signature did not verify (answered 400). */
  readonly unverified: string[] = [];
  /** How many more requests get a 500 before it accepts. */
  failNext = 0;
  /** Holds every request without an answer (an endpoint that hangs). */
  hang = false;
  secret?: string;
  private readonly sockets = new Set<Socket>();
  private server?: Server;

  constructor(readonly port: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks/latchkey`;
  }

  static async start(): Promise<WebhookReceiver> {
    const r = new WebhookReceiver(await freePort());
    await r.listen();
    return r;
  }

  private listen(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    return new Promise((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    this.arrivals.push(String(req.headers['webhook-id']));
    this.arrivedAt.push(Date.now());
    if (this.hang) return;
    if (this.failNext > 0) {
      this.failNext -= 1;
      res.writeHead(500).end('try later');
      return;
    }
    try {
      const payload = new Webhook(this.secret!).verify(body, req.headers as Record<string, string>) as Omit<ReceivedMessage, 'id'>;
      this.accepted.push({ id: String(req.headers['webhook-id']), ...payload });
      res.writeHead(200).end();
    } catch (err) {
      this.unverified.push(`${req.headers['webhook-id']}: ${(err as Error).message}`);
      res.writeHead(400).end();
    }
  }

  /** The kinds it accepted, in order. */
  kinds(): string[] {
    return this.accepted.map((m) => m.type);
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
