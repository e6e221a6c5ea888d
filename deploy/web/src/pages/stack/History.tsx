// A stack's history: its state changes and its latest runs.
import { historyQuery, runsQuery } from "../../api/queries/stacks";
import { useQuery } from "@tanstack/react-query";
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
      <table>
        <caption>Runs</caption>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">By</th>
            <th scope="col">State</th>
            <th scope="col">Started</th>
            <th scope="col">Ended</th>
            <th scope="col">Duration</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {runs.data?.items.map((r) => (
            <tr key={r.id} data-run={r.id}>
              <td>
                <a href={href(`/stacks/${id}`, { run: r.id })}>{runKindLabel(r.kind)}</a>
                {r.action && (
                  <span className="small muted">
                    {" "}
                    {r.action.undo ? "undo " : ""}
                    {r.action.name}
                  </span>
                )}
              </td>
              <td>{r.actor_name ?? (r.actor_id ? r.actor_id.slice(0, 8) : "Horizon")}</td>
              <td>
                <StateBadge state={r.state} />
              </td>
              <td>{when(r.started_at ?? r.created_at)}</td>
              <td>{r.finished_at ? when(r.finished_at) : ""}</td>
              <td>{duration(r.started_at, r.finished_at, now)}</td>
              <td>{r.error ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
