/** A server that failed is tried last for this long, so sign-ins do not wait on it again and again. */
export const DOWN_FOR_MS = 30_000;

/**
 * The configured URLs in order of preference, with memory of which failed recently. Connections are
 * opened to the first server not known to be down; servers known to be down are still tried, last,
 * so that a directory where every server was marked down recovers at the first request.
 */
export class ServerList {
  private readonly downUntil = new Map<string, number>();

  constructor(readonly urls: string[]) {}

  /** URLs to try for a new connection, best first. */
  candidates(now = Date.now()): string[] {
    const up = this.urls.filter((u) => (this.downUntil.get(u) ?? 0) <= now);
    return [...up, ...this.urls.filter((u) => !up.includes(u))];
  }

  /** The server new connections go to now. */
  preferred(now = Date.now()): string {
    return this.candidates(now)[0]!;
  }

  markDown(url: string, now = Date.now()): void {
    this.downUntil.set(url, now + DOWN_FOR_MS);
  }

  markUp(url: string): void {
    this.downUntil.delete(url);
  }
}
