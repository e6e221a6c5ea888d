// RunsTable is the one table of runs (a stack's, its actions', an ISO's): a row a run, marked
// data-run with its id, the columns given by the page.
import type { ReactNode, TableHTMLAttributes } from "react";

export interface RunColumn<R> {
  header: string;
  cell: (r: R) => ReactNode;
}

export function RunsTable<R extends { id: string }>({
  runs,
  columns,
  caption,
  row,
  ...table
}: {
  runs: R[];
  columns: RunColumn<R>[];
  caption?: string;
  /** More attributes of a run's row (data-action-run). */
  row?: (r: R) => Record<string, string | undefined>;
} & TableHTMLAttributes<HTMLTableElement> & { "data-testid"?: string }) {
  return (
    <table {...table}>
      {caption && <caption>{caption}</caption>}
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c.header} scope="col">
              {c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <tr key={r.id} data-run={r.id} {...row?.(r)}>
            {columns.map((c) => (
              <td key={c.header}>{c.cell(r)}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
