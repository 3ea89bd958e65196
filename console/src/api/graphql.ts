/** Sends the generated operations to /graphql with the in-memory access token. */
import { endpoints } from '../config.ts';
import { accessToken, renew } from '../auth/session.ts';
import { store } from '../ui/store.ts';
import type { Operation } from './generated.ts';

/** An error of the admin API: its `extensions.code`, and the input field it names (BAD_USER_INPUT). */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    // The server's message starts with the field's API name; the console names it by its label instead.
    super(field && message.startsWith(`${field}: `) ? message.slice(field.length + 2) : message);
  }
}

/**
 * Counts the API's FORBIDDEN answers: the admin's permissions may have changed under the console (a
 * role taken away), so the frame reads them again (auth/permissions.ts) and shows what is left.
 */
export const forbidden = store(0);

interface Answer<R> {
  data?: R | null;
  errors?: Array<{ message: string; extensions?: { code?: string; field?: string } }>;
}

/** `quiet`: a FORBIDDEN answer is only this request's error (the read of the permissions itself). */
export async function request<R, V>(operation: Operation<R, V>, variables: V, options: { quiet?: boolean } = {}): Promise<R> {
  for (let attempt = 0; ; attempt++) {
    const token = await accessToken();
    let res: Response;
    try {
      res = await fetch(endpoints.graphql, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: operation, variables }),
        credentials: 'omit',
      });
    } catch {
      throw new ApiError('NETWORK', 'the server cannot be reached; check the connection and try again');
    }
    const answer = (await res.json().catch(() => ({}))) as Answer<R>;
    const error = answer.errors?.[0];
    if (!error && answer.data) return answer.data;
    const code = error?.extensions?.code ?? `HTTP_${res.status}`;
    // The token expired or was revoked under us: renew once and send the request again.
    if (code === 'UNAUTHENTICATED' && attempt === 0) {
      await renew();
      continue;
    }
    if (code === 'FORBIDDEN' && !options.quiet) forbidden.set(forbidden.get() + 1);
    throw new ApiError(code, error?.message ?? `the server answered ${res.status}`, error?.extensions?.field);
  }
}
