import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { ApiError } from '../api/graphql.ts';
import { Dialog, ErrorNote, useAction } from './kit.tsx';

/** An act on one row that asks first (delete, revoke): the row asked about, and the act's progress. */
export function useConfirm<T>() {
  const [asked, setAsked] = useState<T>();
  const action = useAction();
  return {
    ...action,
    /** The row the question is about; undefined while none is asked. */
    asked,
    ask: (row: T) => {
      action.clear();
      setAsked(row);
    },
    close: () => setAsked(undefined),
  };
}

/** The question before an act that cannot be taken back: what it does, how it failed, its button and Cancel. */
export function ConfirmDialog({
  title,
  confirm,
  label,
  busyLabel,
  labels,
  onConfirm,
  children,
}: {
  title: string;
  confirm: { busy: boolean; error?: ApiError; close: () => void };
  /** The act's button ("Delete role"), and what it says while the act runs ("Deleting…"). */
  label: string;
  busyLabel: string;
  /** The form's labels, for an error that names a field. */
  labels?: Record<string, string>;
  onConfirm: () => void;
  children: ComponentChildren;
}) {
  return (
    <Dialog title={title} onClose={confirm.close}>
      {children}
      <ErrorNote error={confirm.error} labels={labels} />
      <div class="actions">
        <button type="button" class="danger" disabled={confirm.busy} onClick={onConfirm}>
          {confirm.busy ? busyLabel : label}
        </button>
        <button type="button" class="secondary" onClick={confirm.close}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}
