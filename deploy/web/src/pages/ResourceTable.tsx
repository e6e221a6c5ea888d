// ResourceTable: the one table of the catalogue, people and notification screens. Columns are
// described, not drawn by hand: a header and what each row shows under it. Each row carries the
// data-* attributes journeys and scripts find it by, may have an Actions cell, and may open one
// panel (an edit form, a confirmation, a log) in a row of its own below it.
import { Fragment, useState } from "react";
import { Head } from "./common";
import { Delete, ResourceForm, type ResourceFormProps } from "./ResourceForm";

/** DataProps are an element's data-* attributes. */
export type DataProps = Record<`data-${string}`, string>;

/** Column is one of a ResourceTable's columns: its header and each row's cell under it. */
export type Column<T> = {
  header: string;
  cell: (row: T) => React.ReactNode;
  /** The cell's own data-* attributes (what a test reads in it). */
  data?: (row: T) => DataProps;
};

/** Panel is a row's panel below it: which is open ("" none), and how to open or close one. */
export type Panel = {
  open: string;
  /** toggle opens the named panel, or closes it when it is the one open. */
  toggle: (name: string) => void;
  show: (name: string) => void;
  close: () => void;
};

/**
 * ResourceTable is items as a table with a header row (Head). rowData names each row
 * (data-environment, data-token-name…). With actions, the table has an Actions column; pass
 * none when the user may not act on any row. panel draws what a row's open panel shows, in a
 * row below it spanning the table; edit is the form of its "edit" panel (RowActions' Edit),
 * which closes on Cancel and once saved, before its onDone. With empty, an empty list shows
 * that instead of a table.
 */
export function ResourceTable<T>({
  items,
  columns,
  rowKey,
  rowData,
  actions,
  panel,
  edit,
  caption,
  empty,
}: {
  items: readonly T[] | undefined;
  columns: Column<T>[];
  rowKey: (row: T) => string;
  rowData?: (row: T) => DataProps;
  actions?: ((row: T, p: Panel) => React.ReactNode) | false;
  panel?: (row: T, open: string, close: () => void) => React.ReactNode;
  edit?: (row: T) => Omit<ResourceFormProps, "onCancel">;
  caption?: React.ReactNode;
  empty?: React.ReactNode;
}) {
  if (empty && items?.length === 0) return <>{empty}</>;
  return (
    <table>
      {caption && <caption>{caption}</caption>}
      <Head cols={columns.map((c) => c.header)} actions={!!actions} />
      <tbody>
        {items?.map((row) => (
          <Row
            key={rowKey(row)}
            row={row}
            columns={columns}
            rowData={rowData}
            actions={actions || undefined}
            panel={panel ?? (edit && editPanel(edit))}
          />
        ))}
      </tbody>
    </table>
  );
}

/** editPanel draws edit's form in a row's "edit" panel, closed on Cancel and once saved. */
function editPanel<T>(edit: (row: T) => Omit<ResourceFormProps, "onCancel">) {
  return (row: T, open: string, close: () => void) => {
    if (open !== "edit") return null;
    const { onDone, ...form } = edit(row);
    return (
      <ResourceForm
        {...form}
        onCancel={close}
        onDone={(r) => {
          close();
          onDone?.(r);
        }}
      />
    );
  };
}

function Row<T>({
  row,
  columns,
  rowData,
  actions,
  panel,
}: {
  row: T;
  columns: Column<T>[];
  rowData?: (row: T) => DataProps;
  actions?: (row: T, p: Panel) => React.ReactNode;
  panel?: (row: T, open: string, close: () => void) => React.ReactNode;
}) {
  const [open, setOpen] = useState("");
  const p: Panel = {
    open,
    toggle: (name) => setOpen(open === name ? "" : name),
    show: setOpen,
    close: () => setOpen(""),
  };
  return (
    <Fragment>
      <tr {...rowData?.(row)}>
        {columns.map((c) => (
          <td key={c.header} {...c.data?.(row)}>
            {c.cell(row)}
          </td>
        ))}
        {actions && <td>{actions(row, p)}</td>}
      </tr>
      {open && panel && (
        <tr className="expanded">
          <td colSpan={columns.length + (actions ? 1 : 0)}>{panel(row, open, p.close)}</td>
        </tr>
      )}
    </Fragment>
  );
}

/**
 * RowActions is a row's bar of actions, labelled "<name> actions": the buttons given as
 * children, then edit (its word, "Edit" or "Change": it toggles the row's "edit" panel, where
 * the table's panel draws the form), then remove: Delete asked once beside it (verb "Revoke"
 * for a token), or "confirm", which opens the row's "delete" panel for the table's panel to
 * draw a ConfirmDialog with the typed name. Buttons are labelled with the row's name ("Edit
 * lab") so that each is told apart.
 */
export function RowActions({
  name,
  panel,
  edit,
  remove,
  children,
}: {
  name: string;
  panel?: Panel;
  edit?: string;
  remove?: { run: () => Promise<unknown>; onDone: () => void; verb?: string } | "confirm";
  children?: React.ReactNode;
}) {
  return (
    <div className="actions" role="group" aria-label={`${name} actions`}>
      {children}
      {edit && panel && (
        <button
          type="button"
          className="link"
          aria-expanded={panel.open === "edit"}
          onClick={() => panel.toggle("edit")}
          aria-label={`${edit} ${name}`}
        >
          {edit}
        </button>
      )}
      {remove === "confirm"
        ? panel && (
            <button type="button" className="link" onClick={() => panel.show("delete")} aria-label={`Delete ${name}`}>
              Delete
            </button>
          )
        : remove && <Delete what={name} {...remove} />}
    </div>
  );
}
