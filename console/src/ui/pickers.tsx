/**
 * Pickers (docs/access-and-claims.md): a combobox that searches as one types (the ARIA combobox with a
 * listbox popup: arrows move, Enter picks, Escape closes), and on it the group, user and single-user
 * pickers of the Access, Roles and Claims tabs.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, request } from '../api/graphql.ts';
import { GroupSearchQuery, UserNameQuery, UserSearchQuery } from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { FieldError, LabelAndHint } from './kit.tsx';

export interface Option {
  /** What is kept: a group's name, a user's id. */
  value: string;
  label: string;
  /** A second line: members of a group, a user's name and backend. */
  detail?: string;
}

const SUGGESTIONS = 8;

/** An input that suggests options as one types; picking one hands it to `onPick` and empties the box. */
export function Combobox(p: {
  id: string;
  label: string;
  hint?: string;
  search: (text: string) => Promise<Option[]>;
  onPick: (option: Option) => void;
  /** An option for the text as typed (a group no user holds yet), offered after the matches. */
  typed?: (text: string) => Option | undefined;
  /** Options to leave out (those picked already). */
  exclude?: readonly string[];
  invalid?: boolean;
  describedBy?: string;
}) {
  const [text, setText] = useState('');
  const [open, setOpen] = useState(false);
  const [found, setFound] = useState<Option[]>([]);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string>();
  const [active, setActive] = useState(-1);
  const listId = `${p.id}-options`;

  useEffect(() => {
    if (!open) return;
    let live = true;
    const timer = setTimeout(() => {
      setLoading(true);
      p.search(text.trim()).then(
        (options) => {
          if (!live) return;
          setFound(options);
          setError(undefined);
          setLoading(false);
        },
        (err: unknown) => {
          if (!live) return;
          setError(err instanceof ApiError || err instanceof Error ? err.message : String(err));
          setLoading(false);
        },
      );
    }, 200);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [text, open]);

  const excluded = new Set(p.exclude ?? []);
  const matches = found.filter((o) => !excluded.has(o.value));
  const own = text.trim() && p.typed ? p.typed(text.trim()) : undefined;
  const options = own && !excluded.has(own.value) && !matches.some((o) => o.value === own.value) ? [...matches, own] : matches;
  const shown = open && (options.length > 0 || loading || !!error || text.trim() !== '');

  function pick(o: Option) {
    p.onPick(o);
    setText('');
    setActive(-1);
    setOpen(false);
  }

  const described = [p.hint ? `${p.id}-hint` : '', p.describedBy ?? ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class="combo">
      <LabelAndHint id={p.id} label={p.label} hint={p.hint} />
      <input
        id={p.id}
        type="text"
        role="combobox"
        autoComplete="off"
        spellcheck={false}
        aria-autocomplete="list"
        aria-expanded={shown}
        aria-controls={listId}
        aria-activedescendant={shown && active >= 0 && active < options.length ? `${listId}-${active}` : undefined}
        aria-invalid={p.invalid ? 'true' : undefined}
        aria-describedby={described}
        value={text}
        onInput={(e) => {
          setText(e.currentTarget.value);
          setActive(-1);
          setOpen(true);
        }}
        onFocus={() => setOpen(true)}
        onBlur={() => setOpen(false)}
        onKeyDown={(e) => {
          if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
            e.preventDefault();
            setOpen(true);
            if (options.length === 0) return;
            const step = e.key === 'ArrowDown' ? 1 : -1;
            setActive((a) => (a + step + options.length) % options.length);
          } else if (e.key === 'Enter') {
            // Enter picks; it never submits the form around the picker.
            e.preventDefault();
            const chosen = options[active] ?? (options.length === 1 ? options[0] : undefined);
            if (shown && chosen) pick(chosen);
          } else if (e.key === 'Escape' && shown) {
            e.preventDefault();
            e.stopPropagation();
            setOpen(false);
          }
        }}
      />
      <div id={listId} role="listbox" aria-label={p.label} class="options" hidden={!shown}>
        {options.map((o, i) => (
          // biome-ignore lint/a11y/useFocusableInteractive: the ARIA combobox pattern: focus stays in the input, which moves among the options (aria-activedescendant) and picks with Enter.
          // biome-ignore lint/a11y/useKeyWithClickEvents: the keys are the input's (above); the click is the pointer's way to pick.
          <div
            key={o.value}
            id={`${listId}-${i}`}
            role="option"
            aria-selected={i === active}
            class={i === active ? 'active' : undefined}
            // Before the input's blur, which would close the list under the pointer.
            onMouseDown={(e) => e.preventDefault()}
            onClick={() => pick(o)}
          >
            <span>{o.label}</span>
            {o.detail ? <span class="detail">{o.detail}</span> : null}
          </div>
        ))}
        {shown && options.length === 0 ? (
          <div class="none" aria-disabled="true">
            {loading ? 'Searching…' : error ? `The search failed: ${error}` : 'No match'}
          </div>
        ) : null}
      </div>
    </div>
  );
}

/** Picked values, each with its remove button. */
export function Chips({ label, items, onRemove }: { label: string; items: Option[]; onRemove: (value: string) => void }) {
  if (items.length === 0) return null;
  return (
    <ul class="chips" aria-label={label}>
      {items.map((o) => (
        <li key={o.value}>
          <span>{o.label}</span>
          <button type="button" class="chip-remove" aria-label={`Remove ${o.label}`} onClick={() => onRemove(o.value)}>
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}

/** The groups Latchkey knows whose name holds `text`, by name. */
export async function searchGroups(text: string): Promise<Option[]> {
  const r = await request(GroupSearchQuery, { first: SUGGESTIONS, search: text || null });
  return r.groups.edges.map(({ node }) => ({
    value: node.name,
    label: node.name,
    detail: `${node.members} member${node.members === 1 ? '' : 's'}`,
  }));
}

/** Users whose name or email holds `text`. */
export async function searchUsers(text: string): Promise<Option[]> {
  const r = await request(UserSearchQuery, { first: SUGGESTIONS, search: text || null });
  return r.users.edges.map(({ node }) => ({
    value: node.id,
    label: node.username,
    detail: [node.displayName ?? node.email, node.backend, node.disabled ? 'disabled' : ''].filter(Boolean).join(' · '),
  }));
}

/** Usernames by id, kept while the console is open: a policy stores ids, a person reads names. */
const names = new Map<string, string>();

/** The usernames of `ids`, loaded as needed; an id without a user shows as itself. */
export function useUserNames(ids: readonly string[]): Map<string, string> {
  const [, setVersion] = useState(0);
  // Without users:read (an application owner) the ids stay ids: the API would refuse the lookups.
  const readUsers = useCan()('users:read');
  const missing = readUsers ? ids.filter((id) => !names.has(id)) : [];
  const key = missing.join(' ');
  useEffect(() => {
    if (!missing.length) return;
    let live = true;
    Promise.all(
      missing.map((id) =>
        request(UserNameQuery, { id }).then(
          (r) => names.set(id, r.user?.username ?? `${id} (no such user)`),
          () => undefined,
        ),
      ),
    ).then(() => live && setVersion((v) => v + 1));
    return () => void (live = false);
  }, [key]);
  return names;
}

/** Remembers the names of users picked in a picker, so their chips need no lookup. */
export const rememberUser = (o: Option) => names.set(o.value, o.label);

interface ListPickerProps {
  /** The API's name of the list, to mark it when an error names it (`access.groups`). */
  name: string;
  id: string;
  label: string;
  hint?: string;
  value: string[];
  onChange: (value: string[]) => void;
  error?: ApiError;
}

/** A list picked in a combobox, shown as chips, marked when an error names it. */
function ListPicker(
  p: ListPickerProps & {
    search: (text: string) => Promise<Option[]>;
    typed?: (text: string) => Option | undefined;
    onPicked?: (option: Option) => void;
    /** How a kept value reads on its chip. */
    labelOf: (value: string) => string;
  },
) {
  const invalid = !!p.error?.field && p.error.field.startsWith(p.name);
  return (
    <div class={`field picker${invalid ? ' invalid' : ''}`}>
      <Combobox
        id={p.id}
        label={p.label}
        hint={p.hint}
        search={p.search}
        exclude={p.value}
        typed={p.typed}
        onPick={(o) => {
          p.onPicked?.(o);
          p.onChange([...p.value, o.value]);
        }}
        invalid={invalid}
        describedBy={invalid ? `${p.id}-error` : undefined}
      />
      <Chips
        label={`${p.label}: picked`}
        items={p.value.map((v) => ({ value: v, label: p.labelOf(v) }))}
        onRemove={(v) => p.onChange(p.value.filter((x) => x !== v))}
      />
      {invalid ? <FieldError id={p.id} error={p.error!} /> : null}
    </div>
  );
}

const asTyped = (text: string): Option => ({ value: text, label: text, detail: 'as typed' });

const nothing = async (): Promise<Option[]> => [];

/**
 * Groups, picked from those Latchkey knows as one types, or taken as typed (a group no user has yet).
 * Without users:read (an application owner) only as typed: the search would be refused.
 */
export function GroupsPicker(p: ListPickerProps) {
  const search = useCan()('users:read') ? searchGroups : nothing;
  return <ListPicker {...p} search={search} typed={asTyped} labelOf={(g) => g} />;
}

/** Users, picked by name; kept by id. Without users:read, the users kept can be removed, not found. */
export function UsersPicker(p: ListPickerProps) {
  const known = useUserNames(p.value);
  const readUsers = useCan()('users:read');
  const hint = readUsers ? p.hint : [p.hint, 'Finding users to add needs the users:read permission.'].filter(Boolean).join(' ');
  return (
    <ListPicker
      {...p}
      hint={hint}
      search={readUsers ? searchUsers : nothing}
      onPicked={rememberUser}
      labelOf={(id) => known.get(id) ?? id}
    />
  );
}

/** One user, for a preview: the picker, then who is picked. */
export function UserChooser({ id, label, user, onChange }: { id: string; label: string; user?: Option; onChange: (user: Option) => void }) {
  return (
    <div class="field picker">
      <Combobox
        id={id}
        label={label}
        hint={user ? `Showing ${user.label}. Type to pick another user.` : 'Type part of a username or email.'}
        search={searchUsers}
        onPick={onChange}
      />
    </div>
  );
}
