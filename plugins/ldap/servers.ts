/** A server that failed is tried last for this long, so sign-ins do not wait on it again and again. */
export const DOWN_FOR_MS = 30_000;

/**
 * The configured URLs in order of preference, with memory of which failed recently. Connections are
 * opened to the first server not known to be down; servers known to be down are still tried, last
 * (the one that failed longest ago first), so a directory whose servers were all marked down recovers
 * at the first request after one of them is back.
 */
export class ServerList {
  private readonly downUntil = new Map<string, number>();

  constructor(readonly urls: string[]) {}

  /** URLs to try for a new connection, best first: live ones in configured order, then the one that failed longest ago. */
  candidates(now = Date.now()): string[] {
    const until = (u: string) => this.downUntil.get(u) ?? 0;
    const up = this.urls.filter((u) => until(u) <= now);
    const down = this.urls.filter((u) => until(u) > now).sort((x, y) => until(x) - until(y));
    return [...up, ...down];
  }

  /** The server new connections go to now. */
  preferred(now = Date.now()): string {
    return this.candidates(now)[0]!;
  }

  /** Failed recently while another server is thought to be up: connections to it should be dropped. */
  avoid(url: string, now = Date.now()): boolean {
    return (this.downUntil.get(url) ?? 0) > now && this.preferred(now) !== url;
  }

  markDown(url: string, now = Date.now()): void {
    this.downUntil.set(url, now + DOWN_FOR_MS);
  }

  markUp(url: string): void {
    this.downUntil.delete(url);
  }
}
