// The stacks list: updated live by GET /v1/events (the events stream invalidates ["stacks"]);
// filters live in the URL and are applied by the server (state, team, environment, label, text,
// drift: a drifted stack carries a "drift" badge),
// so that every page is filtered, not only the one loaded. Failed and running stacks come first.
import { stacksQuery } from "../api/queries/stacks";
import { useQuery } from "@tanstack/react-query";
import type { StackSummary } from "../api/client";
import { href, navigate, useRoute } from "../router";
import { nameOf, useEnvironments, useTeams, useTemplates } from "./lookups";
import { Head, ProblemBox, StateBadge, when } from "./common";
import { DriftBadge } from "../drift/DriftView";

const STATES = ["draft", "deploying", "deployed", "updating", "failed", "removing", "removed"];
const rank: Record<string, number> = { failed: 0, deploying: 1, updating: 1, removing: 1 };

export function sortStacks(items: StackSummary[]): StackSummary[] {
  return [...items].sort((a, b) => (rank[a.state] ?? 2) - (rank[b.state] ?? 2) || b.updated_at.localeCompare(a.updated_at));
}

export function StacksList() {
  const { query } = useRoute();
  const f = {
    state: query.get("state") ?? "",
    team: query.get("team") ?? "",
    env: query.get("env") ?? "",
    label: query.get("label") ?? "",
    q: query.get("q") ?? "",
    drift: query.get("drift") ?? "",
    cursor: query.get("cursor") ?? "",
  };
  const set = (k: keyof typeof f, v: string) => navigate("/stacks", { ...f, cursor: undefined, [k]: v }, true);
  const stacks = useQuery(stacksQuery(f));
  const templates = useTemplates();
  const envs = useEnvironments();
  const teams = useTeams();
  const rows = sortStacks(stacks.data?.items ?? []);
  return (
    <>
      <div className="page-head">
        <h1>Stacks</h1>
        <a className="button primary" href={href("/stacks/new")}>
          New stack
        </a>
      </div>
      <form className="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search <input type="search" value={f.q} onChange={(e) => set("q", e.target.value)} />
        </label>
        <label>
          State
          <select value={f.state} onChange={(e) => set("state", e.target.value)}>
            {/* The API leaves removed stacks out unless asked for them: say so. */}
            <option value="">any but removed</option>
            {STATES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Team
          <select value={f.team} onChange={(e) => set("team", e.target.value)}>
            <option value="">any</option>
            {teams.data?.items.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Environment
          <select value={f.env} onChange={(e) => set("env", e.target.value)}>
            <option value="">any</option>
            {envs.data?.items.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Drift
          <select value={f.drift} onChange={(e) => set("drift", e.target.value)}>
            <option value="">any</option>
            <option value="drifted">drifted</option>
            <option value="none">not drifted</option>
          </select>
        </label>
        <label>
          Label <input value={f.label} onChange={(e) => set("label", e.target.value)} />
        </label>
      </form>
      <ProblemBox error={stacks.error} />
      {stacks.isLoading ? (
        <p>Loading…</p>
      ) : rows.length === 0 ? (
        <p className="empty">
          No stack matches. <a href={href("/stacks/new")}>Create one</a>.
        </p>
      ) : (
        <table className="stacks">
          <Head cols={["Name", "State", "Template", "Environment", "Team", "Labels", "Last change"]} />
          <tbody>
            {rows.map((s) => (
              <tr key={s.id} data-stack={s.name}>
                <td>
                  <a href={href(`/stacks/${s.id}`)}>{s.name}</a>
                </td>
                <td>
                  <StateBadge state={s.state} /> <DriftBadge drifted={s.drifted} />
                </td>
                <td>
                  {nameOf(templates.data, s.template_id)} v{s.template_version}
                </td>
                <td>{nameOf(envs.data, s.environment_id)}</td>
                <td>{nameOf(teams.data, s.team_id)}</td>
                <td>
                  {s.labels.map((l) => (
                    <span key={l} className="label">
                      {l}
                    </span>
                  ))}
                </td>
                <td>{when(s.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav className="paging" aria-label="Pages">
        {f.cursor && (
          <button type="button" onClick={() => history.back()}>
            Previous page
          </button>
        )}
        {stacks.data?.next_cursor && (
          <button type="button" onClick={() => navigate("/stacks", { ...f, cursor: stacks.data!.next_cursor! })}>
            Next page
          </button>
        )}
      </nav>
    </>
  );
}
