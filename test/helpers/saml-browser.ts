import { htmlForms } from './html-forms.ts';
import { CookieJar, postForm } from './http.ts';

/** One hop's answer as a browser sees it. */
export interface Hop {
  url: string;
  status: number;
  html: string;
  location: string | null;
}

/**
 * A browser between SAML SPs and Latchkey, over plain HTTP: one cookie jar for every origin (all on
 * 127.0.0.1, as a browser would keep Latchkey's), redirects followed by hand so each hop is seen.
 */
export class SamlBrowser {
  readonly jar = new CookieJar();

  async get(url: string): Promise<Hop> {
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: this.jar.header() } });
    this.jar.store(res);
    return { url, status: res.status, html: await res.text(), location: res.headers.get('location') };
  }

  async post(url: string, fields: Record<string, string>): Promise<Hop> {
    const res = await postForm(url, fields, { cookie: this.jar.header() });
    this.jar.store(res);
    return { url, status: res.status, html: await res.text(), location: res.headers.get('location') };
  }

  /** Follows redirects from `hop` until a page (at most 10 hops); `visited` gets every URL. */
  async follow(hop: Hop, visited: string[] = []): Promise<Hop> {
    let at = hop;
    for (let i = 0; i < 10 && at.status >= 300 && at.status < 400 && at.location; i++) {
      const next = new URL(at.location, at.url).href;
      visited.push(next);
      at = await this.get(next);
    }
    return at;
  }

  /** Submits the page's first form with `fields` over its hidden ones (as the user, or its auto-submit script). */
  async submit(page: Hop, fields: Record<string, string> = {}): Promise<Hop> {
    const form = htmlForms(page.html)[0];
    if (!form) throw new Error(`no form on ${page.url} (${page.status}): ${page.html.slice(0, 400)}`);
    return this.post(new URL(form.action, page.url).href, { ...form.fields, ...fields });
  }
}
