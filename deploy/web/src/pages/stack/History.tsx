// A stack's history: its state changes and its latest runs.
import { historyQuery, runsQuery } from "../../api/queries/stacks";
import { useQuery } from "@tanstack/react-query";
import { RunsTable } from "../RunsTable";
import { href } from "../../router";
import { ProblemBox, runKindLabel, StateBadge, StateChanges, when } from "../common";
import { duration } from "../../pipeline/layout";

/** useHistory is the stack's state history (the history section and the force-removal note share it). */
export function useHistory(id: string) {
  return useQuery(historyQuery(id));
}

/** forceRemoved says whether a history ends in a force-removal, whose manifest is then asked for. */
export function forceRemoved(items: { to: string; error: string | null }[]): boolean {
  const last = items.at(-1);
  return last?.to === "removed" && !!last.error?.startsWith("force-removed");
}

export function HistoryView({ id, now }: { id: string; now: number }) {
  const history = useHistory(id);
  const runs = useQuery(runsQuery(id));
  return (
    <div className="history">
      <ProblemBox error={history.error ?? runs.error} />
      <StateChanges items={history.data?.items ?? []} />
      <RunsTable
        caption="Runs"
        runs={runs.data?.items ?? []}
        columns={[
          {
            header: "Run",
            cell: (r) => (
              <>
                <a href={href(`/stacks/${id}`, { run: r.id })}>{runKindLabel(r.kind)}</a>
                {r.action && (
                  <span className="small muted">
                    {" "}
                    {r.action.undo ? "undo " : ""}
                    {r.action.name}
                  </span>
                )}
              </>
            ),
          },
          { header: "By", cell: (r) => r.actor_name ?? (r.actor_id ? r.actor_id.slice(0, 8) : "Horizon") },
          { header: "State", cell: (r) => <StateBadge state={r.state} /> },
          { header: "Started", cell: (r) => when(r.started_at ?? r.created_at) },
          { header: "Ended", cell: (r) => (r.finished_at ? when(r.finished_at) : "") },
          { header: "Duration", cell: (r) => duration(r.started_at, r.finished_at, now) },
          { header: "Error", cell: (r) => r.error ?? "" },
        ]}
      />
    </div>
  );
}
