/** Small HTTP helpers over fetch; redirects are never followed, so tests see each hop. */

export type Fields = Record<string, string | undefined>;

const defined = (f: Fields) => Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)) as Record<string, string>;

export const postForm = (url: string, fields: Fields, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(defined(fields)).toString(),
  });

export const get = (url: string, query: Fields = {}, headers: Record<string, string> = {}) => {
  const q = new URLSearchParams(defined(query)).toString();
  return fetch(q ? `${url}${url.includes('?') ? '&' : '?'}${q}` : url, { redirect: 'manual', headers });
};

export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

/** The query of a redirect's Location as a plain object. */
export function locationQuery(res: Response): Record<string, string> {
  const location = res.headers.get('location');
  if (!location) throw new Error(`expected a redirect, got ${res.status}`);
  return Object.fromEntries(new URL(location).searchParams);
}

/** A browser's cookie jar, enough for the SSO and CSRF cookies. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  has(name: string): boolean {
    return this.cookies.has(name);
  }
}

/** The hidden inputs of an HTML form, by name. */
export function hiddenFields(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  const unescapeHtml = (s: string) =>
    s
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&');
  for (const m of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) out[unescapeHtml(m[1]!)] = unescapeHtml(m[2]!);
  return out;
}
