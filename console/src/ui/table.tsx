/**
 * The console's lists: one table that a phone shows as cards (styles.css, `table.list`). A section
 * declares its columns once; the table gives every list the same markup: a name, column headers,
 * the cell that names its row as a row header, the phone's label on each cell, and the line that
 * stands instead of an empty list.
 */
import type { ComponentChildren } from 'preact';

/** One column: its header and what each row shows under it. */
export interface Column<T> {
  /** The column header, and the label a phone shows before each of its cells. */
  header: string;
  cell: (row: T) => ComponentChildren;
  /** The column that names the row (one a table): its cells are row headers. */
  rowHeader?: boolean;
  /** A class on its cells: `when` keeps a date on one line, `uris` and `details` narrow long text. */
  class?: string;
}

interface TableProps<T> {
  /** The table's accessible name. */
  label: string;
  columns: ReadonlyArray<Column<T>>;
  /** Nothing is shown until they have loaded. */
  rows: readonly T[] | undefined;
  /** What tells the rows apart across reloads. */
  rowKey: (row: T) => string;
  /** The line shown instead of a table without rows. */
  empty: string;
  /** The row's buttons and links, in a last column whose header only a screen reader hears. */
  actions?: (row: T) => ComponentChildren;
  /** A class on a row (a disabled user's row is greyed). */
  rowClass?: (row: T) => string | undefined;
  /** A class beside `list` on the table (`audit`). */
  class?: string;
}

export function Table<T>({ label, columns, rows, rowKey, empty, actions, rowClass, class: extra }: TableProps<T>) {
  if (!rows) return null;
  if (rows.length === 0) return <p class="empty">{empty}</p>;
  return (
    <table class={extra ? `list ${extra}` : 'list'} aria-label={label}>
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c.header} scope="col">
              {c.header}
            </th>
          ))}
          {actions ? (
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          ) : null}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={rowKey(row)} class={rowClass?.(row)}>
            {columns.map((c) =>
              c.rowHeader ? (
                <th key={c.header} scope="row" data-label={c.header} class={c.class}>
                  {c.cell(row)}
                </th>
              ) : (
                <td key={c.header} data-label={c.header} class={c.class}>
                  {c.cell(row)}
                </td>
              ),
            )}
            {actions ? <td class="row-actions">{actions(row)}</td> : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
