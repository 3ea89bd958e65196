import type { AddressRules } from './address-rules.ts';
import { outboundFetch } from './fetch.ts';
import { OutboundError } from './outbound-error.ts';

/** What jose and openid-client pass to a `customFetch`: fetch's options, a body maybe any Uint8Array. */
export interface FetchOptions {
  method?: string;
  headers?: HeadersInit;
  body?: BodyInit | Uint8Array | null;
  redirect?: RequestRedirect;
  signal?: AbortSignal | null;
}

/** The `fetch` shape jose's and openid-client's `customFetch` option takes. */
export type FetchLike = (input: string | URL, init?: FetchOptions) => Promise<Response>;

/** Statuses a Response cannot carry a body with. */
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * `outboundFetch` in the shape of fetch, for libraries that take one (jose's `createRemoteJWKSet`,
 * openid-client): the answer is read, within `maxBytes`, before the library sees it, and comes back
 * as a Response. The library's own signal (its timeout) is honoured with its own reason, so its
 * "timed out" errors stay what they were.
 */
export function asFetch(rules: AddressRules, limits: { maxBytes: number; timeoutMs: number }): FetchLike {
  return async (input, init) => {
    // Request reads every form of headers and body the libraries pass (Headers, objects, URLSearchParams).
    const request = new Request(input, { method: init?.method, headers: init?.headers, body: init?.body as BodyInit | null | undefined });
    const sent = request.body ? new Uint8Array(await request.arrayBuffer()) : undefined;
    const answer = await outboundFetch(request.url, rules, {
      method: request.method,
      headers: Object.fromEntries(request.headers),
      body: sent,
      signal: init?.signal ?? undefined,
      ...limits,
    });
    if (answer.status < 200 || answer.status > 599) throw new OutboundError('bad-answer', `HTTP ${answer.status}`);
    const headers = new Headers();
    for (const [name, value] of answer.headers) {
      try {
        headers.append(name, value);
      } catch {
        // A header fetch would not accept either: left out.
      }
    }
    const body = NO_BODY.has(answer.status) ? null : new Uint8Array(answer.body);
    try {
      return new Response(body, { status: answer.status, statusText: answer.statusText, headers });
    } catch {
      // A reason phrase fetch would not accept: the status is what counts.
      return new Response(body, { status: answer.status, headers });
    }
  };
}
