import { InputError } from '../errors/service.ts';
import type { Client } from './model.ts';

/**
 * A browser app's origin (docs/connect-an-application.md, CORS): `scheme://host[:port]`, http or https, written exactly as
 * the browser sends it in `Origin` (no path, no trailing slash, no default port), since the check at
 * request time is a plain string comparison. No `*`: an origin names one app.
 */
export function checkWebOrigin(field: string, value: string): void {
  const url = parse(value);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || value.includes('*') || url.origin !== value) {
    throw new InputError(
      field,
      `${JSON.stringify(value)} is not an origin: scheme://host[:port], http or https, no path${url?.origin && url.origin !== 'null' ? ` (did you mean ${url.origin}?)` : ''}`,
    );
  }
}

/** The origins of the http(s) redirect URIs: a browser app's default web origins. */
export function redirectOrigins(redirectUris: string[]): string[] {
  const origins = new Set<string>();
  for (const uri of redirectUris) {
    const url = parse(uri);
    if (url && (url.protocol === 'http:' || url.protocol === 'https:')) origins.add(url.origin);
  }
  return [...origins];
}

/** The origins a client's browser app may call from: those set, else those of its redirect URIs. */
export const webOriginsOf = (client: Pick<Client, 'webOrigins' | 'redirectUris'>): string[] =>
  client.webOrigins ?? redirectOrigins(client.redirectUris);

function parse(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}
