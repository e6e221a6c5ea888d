// The ISO screens: the list (state, server, where in the cluster it may be used), the build form
// (an ISO template built on a node: POST /v1/isos) and an ISO's detail — its latest run's stages
// drawn by the stacks' PipelineView, the live log (LogView of an ISO), the run's summary, the
// state history, and what admins may do: edit (the next run rebuilds), retry, cancel, delete
// (refused with the API's message naming the stacks while one uses it).
// Everything refreshes from GET /v1/events (the shell invalidates ["isos"] and ["iso", id]).
import { isoKey, isoQuery, isoRunsQuery, isosKey, isosQuery } from "../api/queries/isos";
import { isoTemplatesQuery, proxmoxServersQuery } from "../api/queries/lookups";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, call } from "../api/client";
import { useMe } from "../api/queries/me";
import { useNow } from "../now";
import { availability, isoPipeline, summaryText } from "../isos/isos";
import { isoLog, LogView } from "../log/LogView";
import { PipelineView } from "../pipeline/PipelineView";
import { RunsTable } from "./RunsTable";
import { href, navigate, useRoute } from "../router";
import { Head, ProblemBox, StateBadge, StateChanges, when } from "./common";
import { nameOf } from "./lookups";
import { Delete, list, opt, ResourceForm, str, type FieldSpec } from "./ResourceForm";

const STATES = ["building", "built", "failed", "removing", "removed"];
const STAGES = ["preflight", "image", "vm-create", "vm-configure", "template", "clones"] as const;
type Stage = (typeof STAGES)[number];

const useServers = () => useQuery(proxmoxServersQuery());
const useISOTemplates = () => useQuery(isoTemplatesQuery());

/**
 * EmptyIsos says why the list is empty and what to do: a new installation has no ISO template,
 * which only the API registers (an admin's POST /v1/iso-templates), so the list says how.
 */
export function EmptyIsos({ filtered, templates }: { filtered: boolean; templates?: number }) {
  // With templates, an empty list may only hide removed ISOs (the default filter): say no more.
  if (!filtered && templates === 0)
    return (
      <p className="empty" data-empty="iso-templates">
        No ISO yet, and no ISO template to build one from. An admin registers an ISO template with the API —{" "}
        <code>POST /v1/iso-templates</code> with a name, a kind (<code>iso</code> or <code>cloud-image</code>) and a spec naming the image's
        URL and checksum (deploy/README.md, "ISO builds") — then builds it here with <em>Build an ISO</em>.
      </p>
    );
  return <p className="empty">No ISO matches.</p>;
}

export function IsosList() {
  const { query } = useRoute();
  const f = { state: query.get("state") ?? "", server: query.get("server") ?? "" };
  const isos = useQuery(isosQuery(f));
  const servers = useServers();
  const templates = useISOTemplates();
  const me = useMe();
  const set = (k: keyof typeof f, v: string) => navigate("/isos", { ...f, [k]: v }, true);
  const rows = isos.data?.items ?? [];
  return (
    <>
      <div className="page-head">
        <h1>ISOs</h1>
        {me.data?.role === "admin" && (
          <a className="button primary" href={href("/isos/new")}>
            Build an ISO
          </a>
        )}
      </div>
      <form className="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          State
          <select value={f.state} onChange={(e) => set("state", e.target.value)}>
            <option value="">any but removed</option>
            {STATES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Proxmox server
          <select value={f.server} onChange={(e) => set("server", e.target.value)}>
            <option value="">any</option>
            {servers.data?.items.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        </label>
      </form>
      <ProblemBox error={isos.error} />
      {isos.isLoading ? (
        <p>Loading…</p>
      ) : rows.length === 0 ? (
        <EmptyIsos filtered={!!(f.state || f.server)} templates={templates.data?.items.length} />
      ) : (
        <table className="isos">
          <Head cols={["Name", "State", "ISO template", "Server", "Node", "Available on", "Last change"]} />
          <tbody>
            {rows.map((i) => (
              <tr key={i.id} data-iso={i.name}>
                <td>
                  <a href={href(`/isos/${i.id}`)}>{i.name}</a>
                </td>
                <td>
                  <StateBadge state={i.state} />
                  {i.outdated && <span className="label">outdated</span>}
                </td>
                <td>
                  {nameOf(templates.data, i.iso_template_id)} v{i.iso_template_version} ({i.kind})
                </td>
                <td>{nameOf(servers.data, i.proxmox_server_id)}</td>
                <td>{i.node}</td>
                <td>{availability(i)}</td>
                <td>{when(i.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** BuildIso is the build request's form: which template, on which server and node. */
export function BuildIso() {
  const servers = useServers();
  const templates = useISOTemplates();
  if (servers.isLoading || templates.isLoading) return <p>Loading…</p>;
  const fields: FieldSpec[] = [
    {
      name: "iso_template_id",
      label: "ISO template",
      kind: "select",
      required: true,
      options: (templates.data?.items ?? [])
        .filter((t) => t.active)
        .map((t) => ({ value: t.id, label: `${t.name} (${t.kind}, latest v${t.latest_version})` })),
    },
    { name: "version", label: "Version", kind: "number", hint: "Default the template's latest." },
    {
      name: "proxmox_server_id",
      label: "Proxmox server",
      kind: "select",
      required: true,
      options: (servers.data?.items ?? []).map((s) => ({ value: s.id, label: s.name })),
    },
    {
      name: "node",
      label: "Node",
      kind: "select",
      required: true,
      hint: "A node of the chosen Proxmox server.",
      options: (v) =>
        (servers.data?.items ?? [])
          .filter((s) => s.id === v.proxmox_server_id)
          .flatMap((s) => s.nodes.map((n) => ({ value: n.name, label: `${n.name}${n.online ? "" : " (offline)"}` }))),
    },
    { name: "storage", label: "Storage", hint: "Where the image is downloaded; default the template's." },
    { name: "name", label: "Name", hint: 'Default "<template> v<version> on <node>".' },
    { name: "skip", label: "Stages to skip", kind: "multi", options: STAGES.map((s) => ({ value: s, label: s })) },
  ];
  return (
    <>
      <h1>Build an ISO</h1>
      <ResourceForm
        title="The image to build"
        submitLabel="Build"
        fields={fields}
        onCancel={() => navigate("/isos")}
        onDone={(r) => navigate(`/isos/${(r as { id: string }).id}`)}
        submit={(v) => {
          const skip = list(v, "skip") as Stage[];
          const version = str(v, "version");
          return call(
            api.POST("/v1/isos", {
              body: {
                iso_template_id: str(v, "iso_template_id"),
                proxmox_server_id: str(v, "proxmox_server_id"),
                node: str(v, "node"),
                name: opt(v, "name"),
                storage: opt(v, "storage"),
                ...(version ? { version: Number(version) } : {}),
                ...(skip.length ? { stages: { skip } } : {}),
              },
            }),
          );
        }}
      />
    </>
  );
}

export function IsoDetail({ id }: { id: string }) {
  const qc = useQueryClient();
  const now = useNow();
  const { query } = useRoute();
  // ?run= shows an older run's log (from the build history); the pipeline is the latest run's.
  const runParam = query.get("run") ?? "";
  const iso = useQuery(isoQuery(id));
  const runs = useQuery(isoRunsQuery(id));
  const servers = useServers();
  const templates = useISOTemplates();
  const [err, setErr] = useState<unknown>(null);
  const [confirm, setConfirm] = useState<"" | "cancel" | "edit">("");
  const i = iso.data;
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: isoKey(id) });
    void qc.invalidateQueries({ queryKey: isosKey });
  };
  const act = async (fn: () => Promise<unknown>) => {
    setErr(null);
    try {
      await fn();
      setConfirm("");
      refresh();
    } catch (e) {
      setErr(e);
    }
  };
  if (iso.isLoading) return <p>Loading…</p>;
  if (!i) return <ProblemBox error={iso.error} />;
  const allowed = new Set(i.allowed_actions);
  const run = i.last_run;
  const jobs = [...STAGES, "remove"]
    .map((s) => ({ job: s, executions: (run?.stages.filter((x) => x.stage === s) ?? []).map((_, i) => i) }))
    .filter((j) => j.executions.length > 0);
  return (
    <>
      <div className="page-head">
        <h1>
          {i.name} <StateBadge state={i.state} />
          {i.outdated && <span className="label">outdated: the next run rebuilds</span>}
        </h1>
        <div className="actions" role="group" aria-label="ISO actions">
          {allowed.has("edit") && (
            <button type="button" onClick={() => setConfirm(confirm === "edit" ? "" : "edit")}>
              Edit
            </button>
          )}
          {allowed.has("retry") && (
            <button
              type="button"
              className="primary"
              onClick={() => void act(() => call(api.POST("/v1/isos/{id}/retry", { params: { path: { id } }, body: {} })))}
            >
              Retry
            </button>
          )}
          {allowed.has("cancel") && (
            <button type="button" onClick={() => setConfirm("cancel")}>
              Cancel run
            </button>
          )}
          {allowed.has("delete") && (
            <Delete what={i.name} onDone={refresh} run={() => call(api.DELETE("/v1/isos/{id}", { params: { path: { id } } }))} />
          )}
        </div>
      </div>
      {confirm === "cancel" && (
        <div className="confirm" role="alertdialog" aria-labelledby="confirm-text">
          <p id="confirm-text">Cancel the run in progress? The Proxmox task its stage waits on is stopped.</p>
          <button
            type="button"
            className="danger"
            autoFocus
            onClick={() => void act(() => call(api.POST("/v1/isos/{id}/cancel", { params: { path: { id } } })))}
          >
            Yes, cancel the run
          </button>
          <button type="button" onClick={() => setConfirm("")}>
            No
          </button>
        </div>
      )}
      {confirm === "edit" && (
        <ResourceForm
          title={`Edit ${i.name}`}
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "version", label: "Template version", kind: "number", required: true },
            { name: "storage", label: "Storage", required: true, hint: "Where the image is downloaded." },
          ]}
          initial={{ name: i.name, version: String(i.iso_template_version), storage: i.storage }}
          onCancel={() => setConfirm("")}
          onDone={() => {
            setConfirm("");
            refresh();
          }}
          submit={(v) =>
            call(
              api.PATCH("/v1/isos/{id}", {
                params: { path: { id }, header: { "If-Match": `"${i.version}"` } },
                body: { name: str(v, "name"), version: Number(str(v, "version")), storage: str(v, "storage") },
              }),
            )
          }
        />
      )}
      <ProblemBox error={err} />
      <dl className="facts">
        <dt>ISO template</dt>
        <dd>
          {nameOf(templates.data, i.iso_template_id)} v{i.iso_template_version} ({i.kind})
        </dd>
        <dt>Where</dt>
        <dd>
          {nameOf(servers.data, i.proxmox_server_id)} · node {i.node} · storage {i.storage}
        </dd>
        <dt>Available on</dt>
        <dd>{availability(i, i.copies)}</dd>
        {i.artifact && (
          <>
            <dt>Stacks use</dt>
            <dd>
              <code>{i.artifact.value}</code>
            </dd>
          </>
        )}
        <dt>Created</dt>
        <dd>{when(i.created_at)}</dd>
        <dt>Last change</dt>
        <dd>{when(i.updated_at)}</dd>
      </dl>
      <h2>
        Pipeline{" "}
        {run && (
          <span className="small muted">
            run {run.kind.replace("iso_", "")} · <StateBadge state={run.state} /> · started {when(run.started_at ?? run.created_at)}
          </span>
        )}
      </h2>
      {run ? (
        <>
          {run.error && <p className="problem">{run.error}</p>}
          <PipelineView pipeline={isoPipeline(run)} now={now} />
          <p data-testid="iso-summary">
            <strong>Summary:</strong> {summaryText(run.summary)}
          </p>
          <h2>
            Log{" "}
            {runParam && runParam !== run.id && (
              <span className="small muted">
                of the run of {when(runs.data?.items.find((r) => r.id === runParam)?.created_at)} ·{" "}
                <a href={href(`/isos/${id}`)}>latest run</a>
              </span>
            )}
          </h2>
          <LogView
            key={runParam || run.id}
            source={isoLog(id)}
            runId={runParam || run.id}
            follow={false}
            jobs={runParam && runParam !== run.id ? [] : jobs}
          />
        </>
      ) : (
        <p className="muted">No run yet.</p>
      )}
      <h2>Builds</h2>
      <ProblemBox error={runs.error} />
      <RunsTable
        data-testid="iso-runs"
        caption="Runs of this ISO, newest first"
        runs={runs.data?.items ?? []}
        columns={[
          { header: "Started", cell: (r) => when(r.started_at ?? r.created_at) },
          { header: "Kind", cell: (r) => r.kind.replace("iso_", "") },
          { header: "State", cell: (r) => <StateBadge state={r.state} /> },
          { header: "Finished", cell: (r) => when(r.finished_at) },
          { header: "Error", cell: (r) => r.error ?? "" },
          {
            header: "Log",
            cell: (r) =>
              (runParam || run?.id) === r.id ? (
                <span className="muted">shown</span>
              ) : (
                <a href={href(`/isos/${id}`, { run: r.id })} aria-label={`Log of the run of ${when(r.created_at)}`}>
                  View log
                </a>
              ),
          },
        ]}
      />
      <h2>History</h2>
      <StateChanges items={i.history} />
    </>
  );
}
