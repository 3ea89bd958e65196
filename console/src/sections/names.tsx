/** The audit trail holds ids; a person reads names. Each id is looked up once per page load. */
import { useEffect, useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { ClientNameQuery, UserNameQuery } from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { follow, href } from '../ui/router.ts';

const known = new Map<string, Promise<string | null>>();

function lookUp(kind: 'user' | 'client', id: string): Promise<string | null> {
  const key = `${kind}:${id}`;
  let name = known.get(key);
  if (!name) {
    name = (
      kind === 'user'
        ? request(UserNameQuery, { id }, { quiet: true }).then((r) => r.user?.username ?? null)
        : request(ClientNameQuery, { clientId: id }, { quiet: true }).then((r) => r.client?.name ?? null)
    ).catch(() => null);
    known.set(key, name);
  }
  return name;
}

/** A user's or client's name (its id while unknown, or when it no longer exists), linking to its events. */
export function Named({ kind, id }: { kind: 'user' | 'client'; id: string }) {
  const [name, setName] = useState<string | null>(null);
  const can = useCan();
  // Only what the signed-in admin may read is looked up (an auditor reads both; a custom role may not).
  const readable = kind === 'user' ? can('users:read') : can.any('apps:read', 'apps:owned');
  useEffect(() => {
    if (!readable) return;
    let live = true;
    void lookUp(kind, id).then((n) => live && setName(n));
    return () => void (live = false);
  }, [kind, id, readable]);
  const filter = kind === 'user' ? { userId: id } : { clientId: id };
  return (
    <a href={href('audit', filter)} onClick={follow} aria-label={`Events of ${kind} ${name ?? id}`}>
      {name ?? <code>{id}</code>}
    </a>
  );
}
