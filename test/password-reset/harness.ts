import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { DirectoryFile } from '../fixtures/reset-plugin/index.ts';
import { eventually } from '../helpers/eventually.ts';
import { CookieJar, get, hiddenFields, postForm, type Fields } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import type { TestServer } from '../helpers/server.ts';

export const resetPlugin = fileURLToPath(new URL('../fixtures/reset-plugin/index.ts', import.meta.url));
export const staticPlugin = fileURLToPath(new URL('../fixtures/static-plugin/index.ts', import.meta.url));

export interface ReceivedMail {
  to: string;
  subject: string;
  text: string;
}

/**
 * A real SMTP server in the test process (smtp-server) that keeps what it receives, parsed with
 * mailparser; `stop` and `start` take it down and bring it back on the same port.
 */
export class MailServer {
  readonly mails: ReceivedMail[] = [];
  private server?: SMTPServer;
  /** While down, the port is held by a listener that cuts every connection at once, or holds it without a word. */
  private hold?: Server;
  private readonly held = new Set<Socket>();

  private constructor(readonly port: number) {}

  static async start(): Promise<MailServer> {
    const m = new MailServer(await freePort());
    await m.start();
    return m;
  }

  /** Connections a hanging mail server holds now. */
  get hanging(): number {
    return this.held.size;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    await this.release();
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData: (stream, _session, done) => {
        simpleParser(stream)
          .then((parsed) => {
            const to = Array.isArray(parsed.to) ? parsed.to[0] : parsed.to;
            this.mails.push({ to: to?.value[0]?.address ?? '', subject: parsed.subject ?? '', text: parsed.text ?? '' });
            done();
          })
          .catch(done);
      },
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  /**
   * The mail server is down: connections to its port are cut as soon as they open, or (`hang`) held
   * open without a word, as a mail server that hangs does.
   */
  async stop(how: 'refuse' | 'hang' = 'refuse'): Promise<void> {
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.server = undefined;
    this.hold = createServer((socket) => (how === 'refuse' ? socket.destroy() : this.held.add(socket)));
    await new Promise<void>((resolve) => this.hold!.listen(this.port, '127.0.0.1', () => resolve()));
  }

  /** Frees the port held while down (and the connections held by a hanging one). */
  private async release(): Promise<void> {
    for (const socket of this.held) socket.destroy();
    this.held.clear();
    if (this.hold) await new Promise<void>((resolve) => this.hold!.close(() => resolve()));
    this.hold = undefined;
  }

  async close(): Promise<void> {
    if (this.server) await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    await this.release();
  }

  to(address: string): ReceivedMail[] {
    return this.mails.filter((m) => m.to === address);
  }

  /** Waits for the `n`-th mail to `address` (1-based) and gives it. */
  async nth(address: string, n: number): Promise<ReceivedMail> {
    await eventually(`mail ${n} to ${address}`, async () => this.to(address).length >= n);
    return this.to(address)[n - 1]!;
  }
}

/** The reset link in a mail, and its token. */
export function linkIn(mail: ReceivedMail): { link: string; token: string } {
  const link = /(https?:\/\/\S+\/password\/reset\?token=([A-Za-z0-9_-]+))/.exec(mail.text);
  if (!link) throw new Error(`no reset link in the mail: ${mail.text}`);
  return { link: link[1]!, token: link[2]! };
}

/** The directory file the resettable plugin reads and writes. */
export class DirectoryState {
  private readonly dir = mkdtempSync(join(tmpdir(), 'latchkey-reset-dir-'));
  readonly file = join(this.dir, 'directory.json');

  constructor(users: DirectoryFile['users']) {
    writeFileSync(this.file, JSON.stringify({ users }));
  }

  read(): DirectoryFile {
    return JSON.parse(readFileSync(this.file, 'utf8')) as DirectoryFile;
  }

  setDown(down: boolean): void {
    writeFileSync(this.file, JSON.stringify({ ...this.read(), down }));
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface Answer {
  status: number;
  html: string;
  headers: Headers;
}

/** A browser at the reset pages, from its own address (the server trusts one proxy hop). */
export class ResetBrowser {
  readonly jar = new CookieJar();

  constructor(
    private readonly server: TestServer,
    private readonly ip: string,
  ) {}

  private headers(): Record<string, string> {
    return { cookie: this.jar.header(), 'x-forwarded-for': this.ip };
  }

  async open(pathAndQuery: string): Promise<Answer> {
    const res = await get(this.server.url + pathAndQuery, {}, this.headers());
    this.jar.store(res);
    return { status: res.status, html: await res.text(), headers: res.headers };
  }

  async post(path: string, fields: Fields): Promise<Answer> {
    const res = await postForm(this.server.url + path, fields, this.headers());
    this.jar.store(res);
    return { status: res.status, html: await res.text(), headers: res.headers };
  }

  /** "Forgot your password?": the form, then the request for `identifier`. */
  async requestReset(identifier: string): Promise<Answer> {
    const form = await this.open('/password/forgot');
    return this.post('/password/forgot', { ...hiddenFields(form.html), identifier });
  }

  /** The reset form of `token`, filled in and sent. */
  async reset(token: string, fields: Fields): Promise<Answer> {
    const form = await this.open(`/password/reset?token=${encodeURIComponent(token)}`);
    if (form.status !== 200) return form;
    return this.post('/password/reset', { ...hiddenFields(form.html), ...fields });
  }
}

let nextAddress = 1;
/** A fresh client address per browser, so that the per-address limit of one test does not reach another. */
export const freshAddress = (): string => `10.23.${Math.floor(nextAddress / 250)}.${(nextAddress++ % 250) + 1}`;
