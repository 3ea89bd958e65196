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

/** Set when the API answers FORBIDDEN: the console then shows the refusal and nothing else. */
export const forbidden = store(false);

interface Answer<R> {
  data?: R | null;
  errors?: Array<{ message: string; extensions?: { code?: string; field?: string } }>;
}

export async function request<R, V>(operation: Operation<R, V>, variables: V): Promise<R> {
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
    if (code === 'FORBIDDEN') forbidden.set(true);
    throw new ApiError(code, error?.message ?? `the server answered ${res.status}`, error?.extensions?.field);
  }
}
