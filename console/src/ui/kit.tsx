/** The console's small parts: loading and error states, fields, search, pages of a list, dialogs. */
import type { ComponentChildren, InputHTMLAttributes, TargetedEvent } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api/graphql.ts';

const asApiError = (err: unknown): ApiError =>
  err instanceof ApiError ? err : new ApiError('CLIENT', err instanceof Error ? err.message : String(err));

/** Loads data when `deps` change; `reload` loads again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const [version, setVersion] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (err: unknown) => live && setState({ error: asApiError(err), loading: false }),
    );
    return () => void (live = false);
  }, [...deps, version]);
  return { ...state, reload: useCallback(() => setVersion((v) => v + 1), []) };
}

/** Runs one change at a time, remembering whether it is running and how it failed. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  async function run<T>(work: () => Promise<T>): Promise<T | undefined> {
    setBusy(true);
    setError(undefined);
    try {
      return await work();
    } catch (err) {
      setError(asApiError(err));
      return undefined;
    } finally {
      setBusy(false);
    }
  }
  return { busy, error, run, clear: () => setError(undefined) };
}

/** "Loading clients…", announced to screen readers. */
export const Loading = ({ children }: { children: ComponentChildren }) => (
  <p class="loading" role="status">
    <span class="spinner" aria-hidden="true" />
    {children}
  </p>
);

/**
 * An API error where it happened: next to the form or list that caused it. A BAD_USER_INPUT error
 * names its field by the label the form shows for it.
 */
/** What the last action did ("Client created"), read out by screen readers; nothing when there is none. */
export const Notice = ({ text }: { text: string | undefined }) =>
  text ? (
    <p class="notice" role="status">
      {text}
    </p>
  ) : null;

export function ErrorNote({ error, labels = {}, id }: { error?: ApiError; labels?: Record<string, string>; id?: string }) {
  if (!error) return null;
  const field = error.field ? (labels[error.field] ?? error.field) : undefined;
  return (
    <div class="error" role="alert" id={id}>
      {field ? <strong>{field}: </strong> : null}
      {error.message}
    </div>
  );
}

interface FieldProps {
  id: string;
  label: string;
  /** The API's name for it, to mark it when an error names it. */
  name: string;
  value: string;
  onInput: (value: string) => void;
  error?: ApiError;
  hint?: string;
  type?: 'text' | 'email' | 'password' | 'url';
  required?: boolean;
  multiline?: boolean;
  autoComplete?: string;
  inputMode?: 'numeric' | 'text' | 'url';
  placeholder?: string;
  disabled?: boolean;
}

/** A field's label and, when it has one, its hint (`<id>-hint`, for the field's aria-describedby). */
export function LabelAndHint({ id, label, hint }: { id: string; label: string; hint?: string }) {
  return (
    <>
      <label for={id}>{label}</label>
      {hint ? (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
    </>
  );
}

/** The error the API gave for a field, under it (`<id>-error`, for the field's aria-describedby). */
export const FieldError = ({ id, error }: { id: string; error: ApiError }) => (
  <p class="field-error" id={`${id}-error`}>
    {error.message}
  </p>
);

/** A labelled input (or textarea) with its hint and, when the API named it, its error. */
export function Field(p: FieldProps) {
  const invalid = p.error?.field === p.name;
  const described = [p.hint ? `${p.id}-hint` : '', invalid ? `${p.id}-error` : ''].filter(Boolean).join(' ') || undefined;
  const common = {
    id: p.id,
    name: p.name,
    value: p.value,
    required: p.required,
    disabled: p.disabled,
    placeholder: p.placeholder,
    'aria-invalid': invalid ? ('true' as const) : undefined,
    'aria-describedby': described,
    onInput: (e: TargetedEvent<HTMLInputElement | HTMLTextAreaElement>) => p.onInput(e.currentTarget.value),
  };
  return (
    <div class={`field${invalid ? ' invalid' : ''}`}>
      <LabelAndHint id={p.id} label={p.label} hint={p.hint} />
      {p.multiline ? (
        <textarea {...common} rows={3} spellcheck={false} />
      ) : (
        // Preact's types narrow an input's attributes by a literal `type`; this one is chosen at run time.
        <input
          {...({ ...common, type: p.type ?? 'text', autoComplete: p.autoComplete ?? 'off', inputMode: p.inputMode } as InputHTMLAttributes)}
        />
      )}
      {invalid ? <FieldError id={p.id} error={p.error!} /> : null}
    </div>
  );
}

/** The `<option>`s of a select, from [value, label] pairs. */
export const Options = ({ options }: { options: ReadonlyArray<readonly [string, string]> }) => (
  <>
    {options.map(([value, label]) => (
      <option key={value} value={value}>
        {label}
      </option>
    ))}
  </>
);

/** A labelled select of [value, label] pairs. */
export function SelectField<T extends string>(p: {
  id: string;
  label: string;
  value: T;
  options: ReadonlyArray<readonly [T, string]>;
  onChange: (value: T) => void;
  invalid?: boolean;
}) {
  return (
    <div class="field">
      <label for={p.id}>{p.label}</label>
      <select
        id={p.id}
        value={p.value}
        aria-invalid={p.invalid ? 'true' : undefined}
        onChange={(e) => p.onChange(e.currentTarget.value as T)}
      >
        <Options options={p.options} />
      </select>
    </div>
  );
}

/**
 * A form's Save and Cancel: `label` names the first save (register, create); an edit says "Save changes".
 * While it runs the button says `busyLabel`; `disabled` holds it back until the form can be sent.
 */
export function FormActions({
  busy,
  editing = false,
  label,
  busyLabel = 'Saving…',
  disabled = false,
  onCancel,
}: {
  busy: boolean;
  editing?: boolean;
  label: string;
  busyLabel?: string;
  disabled?: boolean;
  onCancel: () => void;
}) {
  return (
    <div class="actions">
      <button type="submit" disabled={busy || disabled}>
        {busy ? busyLabel : editing ? 'Save changes' : label}
      </button>
      <button type="button" class="secondary" onClick={onCancel}>
        Cancel
      </button>
    </div>
  );
}

export function Checkbox({
  id,
  label,
  checked,
  onChange,
  hint,
}: {
  id: string;
  label: string;
  checked: boolean;
  onChange: (v: boolean) => void;
  hint?: string;
}) {
  return (
    <div class="check">
      <input
        id={id}
        type="checkbox"
        checked={checked}
        onChange={(e) => onChange(e.currentTarget.checked)}
        aria-describedby={hint ? `${id}-hint` : undefined}
      />
      <label for={id}>{label}</label>
      {hint ? (
        <span class="hint" id={`${id}-hint`}>
          {hint}
        </span>
      ) : null}
    </div>
  );
}

/** A search box that searches as one types (after a pause) and on Enter. */
export function SearchBox({ id, label, value, onSearch }: { id: string; label: string; value: string; onSearch: (v: string) => void }) {
  const [text, setText] = useState(value);
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const submit = (v: string) => {
    clearTimeout(timer.current);
    if (v.trim() !== value) onSearch(v.trim());
  };
  return (
    // biome-ignore lint/a11y/useSemanticElements: it must stay a form (Enter and the Search button submit it), and <search> is not one; ARIA in HTML allows role="search" on a form, and every browser maps it.
    <form
      role="search"
      class="search"
      onSubmit={(e) => {
        e.preventDefault();
        submit(text);
      }}
    >
      <label for={id}>{label}</label>
      <div class="search-row">
        <input
          id={id}
          type="search"
          value={text}
          onInput={(e) => {
            const v = e.currentTarget.value;
            setText(v);
            clearTimeout(timer.current);
            timer.current = setTimeout(() => submit(v), 350);
          }}
        />
        <button type="submit" class="secondary">
          Search
        </button>
      </div>
    </form>
  );
}

/** Cursor pagination going both ways: the cursors of the pages already seen are kept. */
export function useCursorPages(resetOn: unknown[]) {
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  // Back to the first page as the new search renders, not after the next frame: a reset still pending
  // would run at the next render and undo a page chosen meanwhile (as the audit filters did to typing).
  useLayoutEffect(() => setCursors([null]), resetOn);
  return {
    after: cursors[cursors.length - 1] ?? null,
    index: cursors.length - 1,
    next: (endCursor: string | null | undefined) => endCursor && setCursors((c) => [...c, endCursor]),
    previous: () => setCursors((c) => (c.length > 1 ? c.slice(0, -1) : c)),
  };
}

/** What a list query gives back: the page's rows, the filtered total, and where the next page starts. */
interface Connection {
  edges: unknown[];
  totalCount: number;
  pageInfo: { hasNextPage: boolean; endCursor?: string | null };
}

/** "21–40 of 57" with the previous and next buttons, under a list that has rows; nothing otherwise. */
export function Pager({
  label,
  size,
  pages,
  conn,
}: {
  label: string;
  size: number;
  pages: ReturnType<typeof useCursorPages>;
  conn: Connection | undefined;
}) {
  if (!conn || conn.totalCount === 0) return null;
  const from = pages.index * size + 1;
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <span>
        {from}–{pages.index * size + conn.edges.length} of {conn.totalCount}
      </span>
      <button type="button" class="secondary" disabled={pages.index === 0} onClick={pages.previous}>
        Previous page
      </button>
      <button type="button" class="secondary" disabled={!conn.pageInfo.hasNextPage} onClick={() => pages.next(conn.pageInfo.endCursor)}>
        Next page
      </button>
    </nav>
  );
}

/** A modal dialog (the browser's own: focus stays inside, Escape closes it, focus returns after). */
export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useRef(`dialog-${Math.random().toString(36).slice(2)}`).current;
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      {children}
    </dialog>
  );
}

/** Copies `text`; says so where screen readers hear it. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState<string>();
  return (
    <span class="copy">
      <button
        type="button"
        class="secondary"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(text);
            setDone('Copied');
          } catch {
            setDone('Copying is blocked here: select the text and copy it');
          }
        }}
      >
        {label}
      </button>
      <span role="status" class="copy-status">
        {done}
      </span>
    </span>
  );
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
export const when = (iso: string | null | undefined): string => (iso ? dateFormat.format(new Date(iso)) : '—');

/** Words from a text box: split on spaces, commas and new lines. */
export const words = (text: string): string[] => text.split(/[\s,]+/).filter(Boolean);
