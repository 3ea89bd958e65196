/** The console's pages are paths under /admin; moving between them keeps the page (and the tokens in memory). */
import { consoleBase } from '../config.ts';
import { store } from './store.ts';

const basePath = new URL(consoleBase).pathname;

export interface Route {
  /** `clients`, `users`, … (the first segment after /admin/). */
  page: string;
  query: URLSearchParams;
}

const read = (): Route => ({
  page: location.pathname.slice(basePath.length).replace(/^\/+|\/+$/g, ''),
  query: new URLSearchParams(location.search),
});

export const route = store<Route>(read());
addEventListener('popstate', () => route.set(read()));

/** The URL of a page of the console. */
export const href = (page: string, query?: Record<string, string | undefined>): string => {
  const q = new URLSearchParams(Object.entries(query ?? {}).filter((e): e is [string, string] => !!e[1]));
  return `${basePath}/${page}${q.size ? `?${q}` : ''}`;
};

export function navigate(url: string, replace = false): void {
  history[replace ? 'replaceState' : 'pushState'](null, '', url);
  route.set(read());
}

/** For `onClick` of links: the console moves without a reload; a new-tab click goes on as usual. */
export function follow(e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.currentTarget as HTMLAnchorElement;
  e.preventDefault();
  navigate(a.pathname + a.search);
}
