import { CookieJar, hiddenFields, type Fields } from '../helpers/http.ts';

/** A browser across several origins (Latchkey and its upstream): one cookie jar per origin, redirects followed by hand. */
export class Hops {
  private readonly jars = new Map<string, CookieJar>();

  jar(url: string): CookieJar {
    const origin = new URL(url).origin;
    if (!this.jars.has(origin)) this.jars.set(origin, new CookieJar());
    return this.jars.get(origin)!;
  }

  async get(url: string): Promise<Response> {
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: this.jar(url).header() } });
    this.jar(url).store(res);
    return res;
  }

  async post(url: string, fields: Fields): Promise<Response> {
    const body = new URLSearchParams(Object.entries(fields).filter((e): e is [string, string] => e[1] !== undefined)).toString();
    const res = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: this.jar(url).header(), 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
    this.jar(url).store(res);
    return res;
  }

  /** Posts the form of `page` that holds `field=value` (one of the login page's forms), with its hidden fields. */
  async submitForm(pageUrl: string, html: string, marker: RegExp, extra: Fields = {}): Promise<Response> {
    const form = [...html.matchAll(/<form method="post" action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)].find((m) => marker.test(m[2]!));
    if (!form) throw new Error(`no form matching ${marker} in:\n${html}`);
    const action = new URL(form[1]!.replace(/&amp;/g, '&'), pageUrl).href;
    return this.post(action, { ...hiddenFields(form[2]!), ...extra });
  }
}

export const locationOf = (res: Response, base: string): string => {
  const location = res.headers.get('location');
  if (!location) throw new Error(`expected a redirect, got ${res.status}`);
  return new URL(location, base).href;
};

/**
 * From the redirect to the upstream, signs `account` in at the upstream's own login form and follows
 * it until it sends the browser back to `home` (Latchkey): returns that callback URL, not yet visited.
 */
export async function signInAtUpstream(hops: Hops, to: string, account: string, home: string): Promise<string> {
  let url = to;
  for (let hop = 0; hop < 12; hop++) {
    if (url.startsWith(home)) return url;
    let res = await hops.get(url);
    if (res.status === 200) {
      const html = await res.text();
      if (!/name="login"/.test(html)) throw new Error(`unexpected upstream page at ${url}:\n${html}`);
      res = await hops.post(url, { login: account });
    }
    if (res.status < 300 || res.status >= 400) throw new Error(`upstream answered ${res.status} at ${url}: ${await res.text()}`);
    url = locationOf(res, url);
  }
  throw new Error('too many redirects at the upstream');
}
