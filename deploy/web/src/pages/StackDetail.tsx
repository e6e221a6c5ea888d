// A stack: header, the buttons its allowed_actions permit, the pipeline of its latest run (or a
// chosen one), the live log, the outputs (secret ones behind Copy and Reveal), its actions
// (their forms, instances and runs: ../actions), its drift (../drift) and its history.
// Remove confirms with what happens, in order (a built stack wants its name typed); force-remove
// (admins, failed stacks) lists every VM, address and workspace left behind, offers the abandon
// manifest for download, and wants the name typed too.
// Everything refreshes from GET /v1/events (the shell invalidates ["stack", id]); no polling.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { api, ApiError, call, idempotencyKey, type Card, type Pipeline } from "../api/client";
import { useMe, useNow } from "../App";
import { LogView, stackLog } from "../log/LogView";
import { notCopiedKey } from "../stacks/duplicate";
import { PipelineView } from "../pipeline/PipelineView";
import { href, navigate, useRoute } from "../router";
import { Menu, ProblemBox, runKindLabel, Secret, StateBadge, StateChanges, when } from "./common";
import { duration } from "../pipeline/layout";
import { busyReason, manifestSummary, removeSteps, typedNameMatches, type Manifest } from "../plan/plan";
import { nameOf, useEnvironments, useTemplates } from "./lookups";
import { ActionsSection } from "../actions/ActionsView";
import { DriftSection } from "../drift/DriftView";
import { machineLabel } from "../numbering";

export function StackDetail({ id }: { id: string }) {
  const qc = useQueryClient();
  const { query } = useRoute();
  const runParam = query.get("run") ?? "";
  const now = useNow();
  const stack = useQuery({ queryKey: ["stack", id], queryFn: () => call(api.GET("/v1/stacks/{id}", { params: { path: { id } } })) });
  const s = stack.data;
  const pipeline = useQuery({
    queryKey: ["stack", id, "pipeline", runParam],
    enabled: !!s && s.state !== "draft",
    retry: false,
    queryFn: () => call(api.GET("/v1/stacks/{id}/pipeline", { params: { path: { id }, query: runParam ? { run: runParam } : {} } })),
  });
  const version = useQuery({
    queryKey: ["version", s?.template_id, s?.template_version],
    enabled: !!s,
    staleTime: Infinity,
    queryFn: () =>
      call(api.GET("/v1/templates/{id}/versions/{v}", { params: { path: { id: s!.template_id, v: String(s!.template_version) } } })),
  });
  const instances = useQuery({
    queryKey: ["stack", id, "action-instances"],
    enabled: !!s && s.state !== "draft",
    queryFn: () => call(api.GET("/v1/stacks/{id}/action-instances", { params: { path: { id } } })),
  });
  const templates = useTemplates();
  const envs = useEnvironments();
  const history = useHistory(id);
  const me = useMe();
  const [actionErr, setActionErr] = useState<unknown>(null);
  const [confirm, setConfirm] = useState<"" | "cancel" | "remove" | "force">("");
  const [typed, setTyped] = useState("");
  const [manifest, setManifest] = useState<Manifest | null>(null);

  // A run chosen in the history is shown where its pipeline starts, once it is loaded.
  const pipelineHead = useRef<HTMLHeadingElement>(null);
  const shownRun = pipeline.data?.run.id;
  const lineParam = query.get("line");
  useEffect(() => {
    if (runParam && shownRun === runParam && !lineParam) pipelineHead.current?.scrollIntoView?.({ block: "start" });
  }, [runParam, shownRun, lineParam]);

  /** act does what was asked; an action that starts a run then shows the stack's latest run. */
  const act = async (what: string, fn: () => Promise<unknown>, startsRun = false) => {
    setActionErr(null);
    try {
      await fn();
      setConfirm("");
      setTyped("");
      if (startsRun && runParam) navigate(`/stacks/${id}`);
      void qc.invalidateQueries({ queryKey: ["stack", id] });
      void qc.invalidateQueries({ queryKey: ["stacks"] });
    } catch (e) {
      if (e instanceof ApiError && e.status === 412) void qc.invalidateQueries({ queryKey: ["stack", id] });
      setActionErr(e);
    }
    return what;
  };
  const key = () => ({ "Idempotency-Key": idempotencyKey() });
  const retry = (mode: "failed" | "force" | "all") =>
    act("retry", () => call(api.POST("/v1/stacks/{id}/retry", { params: { path: { id }, header: key() }, body: { mode } })), true);
  const runAgain = (c: Card) =>
    act(
      "run-again",
      () =>
        call(
          api.POST("/v1/stacks/{id}/jobs/{job}/executions/{n}/run-again", {
            params: { path: { id, job: c.job, n: String(c.execution ?? 0) }, header: key() },
          }),
        ),
      true,
    );

  if (stack.isLoading) return <p>Loading…</p>;
  if (!s) return <ProblemBox error={stack.error} />;
  const allowed = new Set(s.allowed_actions);
  const busy = s.state !== "draft" && s.state !== "removed" && me.data && me.data.role !== "viewer" ? busyReason(s) : "";
  const built = s.state !== "draft";
  const phases = version.data?.definition.phases ?? [];
  const steps = removeSteps(
    s,
    phases
      .flatMap((p) => p.jobs)
      .filter((j) => (j.cleanup ?? []).length > 0 && (s.jobs[j.name]?.executions.length ?? 0) > 0)
      .map((j) => j.name),
    phases.map((p) => p.name),
    instances.data?.items.length ?? 0,
  );
  // The preview changes nothing: what would be left behind, before anything is confirmed.
  const openForce = async () => {
    setActionErr(null);
    try {
      const r = await call(api.POST("/v1/stacks/{id}/force-remove", { params: { path: { id }, header: key() }, body: {} }));
      setManifest(r.manifest);
      setTyped("");
      setConfirm("force");
    } catch (e) {
      setActionErr(e);
    }
  };
  const doRemove = () =>
    void act("remove", async () => {
      await call(api.DELETE("/v1/stacks/{id}", { params: { path: { id }, header: key() } }));
      if (!built) navigate("/stacks");
    });
  const doForce = () =>
    void act("force", async () => {
      const r = await call(api.POST("/v1/stacks/{id}/force-remove", { params: { path: { id }, header: key() }, body: { confirm: true } }));
      downloadManifest(r.manifest);
    });
  // The log's filter offers every machine a job has had (an older run's lines may be of one
  // removed since), by its index.
  const jobs = Object.entries(s.jobs).map(([job, j]) => ({
    job,
    executions: [...new Set(j.executions.map((e) => e.index))].sort((a, b) => a - b),
  }));
  return (
    <>
      <div className="page-head">
        <h1>
          {s.name} <StateBadge state={s.state} />
        </h1>
        <div className="actions" role="group" aria-label="Stack actions">
          {allowed.has("edit") && (
            <a className="button" href={href(`/stacks/${id}/edit`)}>
              {s.state === "draft" ? "Edit draft" : "Edit"}
            </a>
          )}
          {busy && (
            <button type="button" disabled aria-describedby="busy-reason">
              Edit
            </button>
          )}
          {allowed.has("deploy") && (
            <button
              type="button"
              className="primary"
              onClick={() =>
                void act("deploy", () => call(api.POST("/v1/stacks/{id}/deploy", { params: { path: { id }, header: key() } })), true)
              }
            >
              Deploy
            </button>
          )}
          {allowed.has("cancel") && (
            <button type="button" onClick={() => setConfirm("cancel")}>
              Cancel run
            </button>
          )}
          {(allowed.has("retry_failed") || allowed.has("force_retry") || allowed.has("retry_all")) && (
            <Menu label="Retry" closeOn={`${runParam}/${shownRun}`}>
              {(close) => (
                <>
                  {allowed.has("retry_failed") && (
                    <button
                      type="button"
                      role="menuitem"
                      onClick={() => {
                        close();
                        void retry("failed");
                      }}
                    >
                      Retry failed jobs
                    </button>
                  )}
                  {allowed.has("force_retry") && (
                    <button
                      type="button"
                      role="menuitem"
                      onClick={() => {
                        close();
                        void retry("force");
                      }}
                    >
                      Force retry (failed jobs at their branch head)
                    </button>
                  )}
                  {allowed.has("retry_all") && (
                    <button
                      type="button"
                      role="menuitem"
                      onClick={() => {
                        close();
                        void retry("all");
                      }}
                    >
                      Retry everything
                    </button>
                  )}
                </>
              )}
            </Menu>
          )}
          {allowed.has("duplicate") && (
            <button
              type="button"
              onClick={() =>
                void act("duplicate", async () => {
                  const d = await call(api.POST("/v1/stacks/{id}/duplicate", { params: { path: { id }, header: key() }, body: {} }));
                  // The draft's form opens with a notice of what the copy left out.
                  qc.setQueryData(notCopiedKey(d.id), { from: s.name, items: d.not_copied ?? [] });
                  navigate(`/stacks/${d.id}/edit`);
                })
              }
            >
              Duplicate
            </button>
          )}
          {allowed.has("remove") && (
            <button
              type="button"
              className="danger"
              onClick={() => {
                setTyped("");
                setConfirm("remove");
              }}
            >
              Remove
            </button>
          )}
          {allowed.has("force_remove") && (
            <button type="button" className="danger" onClick={() => void openForce()}>
              Force-remove
            </button>
          )}
        </div>
      </div>
      {busy && (
        <p id="busy-reason" className="small muted">
          {busy}
        </p>
      )}
      {confirm === "cancel" && (
        <div className="confirm" role="alertdialog" aria-labelledby="confirm-text">
          <p id="confirm-text">Cancel the run in progress? Terraform is interrupted; nothing is rolled back.</p>
          <button
            type="button"
            className="danger"
            autoFocus
            onClick={() => void act("cancel", () => call(api.POST("/v1/stacks/{id}/cancel", { params: { path: { id }, header: key() } })))}
          >
            Yes, cancel the run
          </button>
          <button type="button" onClick={() => setConfirm("")}>
            No
          </button>
        </div>
      )}
      {confirm === "remove" && (
        <div className="confirm block" role="alertdialog" aria-labelledby="remove-title">
          <strong id="remove-title">{built ? `Remove ${s.name}? In order:` : `Remove the draft ${s.name}?`}</strong>
          <ol>
            {steps.map((t, i) => (
              <li key={i}>{t}</li>
            ))}
          </ol>
          {built && (
            <p>
              <label htmlFor="remove-typed">
                Type the stack's name, <strong>{s.name}</strong>, to confirm:
              </label>{" "}
              <input
                id="remove-typed"
                value={typed}
                autoComplete="off"
                autoFocus
                onChange={(e) => setTyped(e.target.value)}
                onKeyDown={onEnter(typedNameMatches(typed, s.name), doRemove)}
              />
            </p>
          )}
          <div className="actions">
            <button type="button" className="danger" disabled={built && !typedNameMatches(typed, s.name)} onClick={doRemove}>
              Yes, remove
            </button>
            <button type="button" onClick={() => setConfirm("")}>
              No
            </button>
          </div>
        </div>
      )}
      {confirm === "force" && manifest && (
        <div className="confirm block" role="alertdialog" aria-labelledby="force-title">
          <strong id="force-title">Force-remove {s.name}? Horizon forgets it and destroys nothing.</strong>
          <p>Left behind for you to clean up by hand: {manifestSummary(manifest)}.</p>
          <ManifestView m={manifest} />
          <p>
            <button type="button" className="link" onClick={() => downloadManifest(manifest)}>
              Download the abandon manifest
            </button>
          </p>
          <p>
            <label htmlFor="force-typed">
              Type the stack's name, <strong>{s.name}</strong>, to confirm:
            </label>{" "}
            <input
              id="force-typed"
              value={typed}
              autoComplete="off"
              autoFocus
              onChange={(e) => setTyped(e.target.value)}
              onKeyDown={onEnter(typedNameMatches(typed, s.name), doForce)}
            />
          </p>
          <div className="actions">
            <button type="button" className="danger" disabled={!typedNameMatches(typed, s.name)} onClick={doForce}>
              Yes, force-remove
            </button>
            <button type="button" onClick={() => setConfirm("")}>
              No
            </button>
          </div>
        </div>
      )}
      <ProblemBox error={actionErr} />
      <dl className="facts">
        <dt>Template</dt>
        <dd>
          {nameOf(templates.data, s.template_id)} v{s.template_version}
        </dd>
        <dt>Commits</dt>
        <dd>
          {version.data
            ? Object.entries(version.data.commits.jobs).map(([j, c]) => (
                <code key={j} title={c}>
                  {j} {c.slice(0, 8)}{" "}
                </code>
              ))
            : "…"}
        </dd>
        <dt>Environment</dt>
        <dd>{nameOf(envs.data, s.environment_id)}</dd>
        <dt>Labels</dt>
        <dd>
          {s.labels.length
            ? s.labels.map((l) => (
                <span key={l} className="label">
                  {l}
                </span>
              ))
            : "none"}
        </dd>
        <dt>Created</dt>
        <dd>{when(s.created_at)}</dd>
        <dt>Last change</dt>
        {/* deployed_at is set when the first deploy starts: it is said once that deploy is over. */}
        <dd>
          {when(s.updated_at)}
          {s.deployed_at && s.state !== "deploying" ? ` · first deployed ${when(s.deployed_at)}` : ""}
        </dd>
      </dl>
      {s.description && <p>{s.description}</p>}
      {/* Only a force-removal records a manifest: a plain removal is not asked for one (a 404). */}
      {s.state === "removed" && me.data?.role === "admin" && forceRemoved(history.data?.items ?? []) && <AbandonManifestLink id={id} />}
      {s.problems.length > 0 && (
        <div className="problem" role="status">
          <strong>Before it can deploy:</strong>
          <ul>
            {s.problems.map((p, i) => (
              <li key={i}>
                <code>{p.field}</code>: {p.message}
              </li>
            ))}
          </ul>
          {allowed.has("edit") && s.state === "draft" && <a href={href(`/stacks/${id}/edit`)}>Fix them in the draft</a>}
        </div>
      )}
      {s.state !== "draft" && (
        <>
          <h2 ref={pipelineHead} id="pipeline">
            Pipeline{" "}
            {pipeline.data && (
              <span className="small muted">
                <span data-run-kind={pipeline.data.run.kind}>{runKindLabel(pipeline.data.run.kind)}</span> ·{" "}
                <StateBadge state={pipeline.data.run.state} /> · started{" "}
                {when(pipeline.data.run.started_at ?? pipeline.data.run.created_at)}
                {runParam && (
                  <>
                    {" "}
                    · <a href={href(`/stacks/${id}`)}>latest run</a>
                  </>
                )}
              </span>
            )}
          </h2>
          {pipeline.data?.run.error && <p className="problem">{pipeline.data.run.error}</p>}
          {pipeline.data ? (
            <PipelineView pipeline={pipeline.data} phases={phases} now={now} onRunAgain={(c) => void runAgain(c)} />
          ) : pipeline.isLoading ? (
            <p>Loading…</p>
          ) : (
            <ProblemBox error={pipeline.error} />
          )}
          <h2>Log</h2>
          {pipeline.isLoading ? (
            <p>Loading…</p>
          ) : (
            <LogView
              key={runParam || "latest"}
              source={stackLog(id)}
              runId={pipeline.data?.run.id}
              follow={!runParam}
              jobs={jobs}
              lineLink={query.get("line") ?? undefined}
              stepNames={stepNames(pipeline.data)}
            />
          )}
          <h2>Outputs</h2>
          <OutputsView id={id} />
          {s.state !== "removed" && <DriftSection stack={s} role={me.data?.role} />}
        </>
      )}
      <ActionsSection stack={s} role={me.data?.role} />
      <h2>History</h2>
      <HistoryView id={id} now={now} />
    </>
  );
}

/** stepNames names the shown run's steps by their kind ("apply", "action script"), for the log's section headers. */
function stepNames(p: Pipeline | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const col of p?.columns ?? []) for (const c of col.cards) out[c.step_id] = c.kind.replace("_", " ");
  return out;
}

function OutputsView({ id }: { id: string }) {
  const outputs = useQuery({
    queryKey: ["stack", id, "outputs"],
    queryFn: () => call(api.GET("/v1/stacks/{id}/outputs", { params: { path: { id } } })),
  });
  if (outputs.error) return <ProblemBox error={outputs.error} />;
  const jobs = Object.entries(outputs.data?.jobs ?? {});
  if (!jobs.length) return <p className="muted">No outputs yet.</p>;
  return <OutputsTable id={id} jobs={jobs} />;
}

type JobOutputs = [job: string, executions: { execution: number; outputs: unknown }[]];

/**
 * OutputsTable is every job's outputs in one table, a row group per job: the values are one
 * column however long a job's or an output's name is (#29 item 12; a table per job aligned
 * each job's values on its own names only).
 */
export function OutputsTable({ id, jobs }: { id: string; jobs: JobOutputs[] }) {
  return (
    <table className="outputs">
      {jobs.map(([job, execs]) => (
        <tbody key={job} aria-label={`Outputs of ${job}`}>
          <tr>
            <th scope="rowgroup" colSpan={2}>
              <h3>{job}</h3>
            </th>
          </tr>
          {execs.flatMap((e) =>
            Object.entries(e.outputs as Record<string, unknown>).map(([name, val]) => (
              <tr key={`${e.execution}/${name}`} data-output={`${job}#${e.execution}.${name}`}>
                <th scope="row">
                  {machineLabel(job, e.execution)} · {name}
                </th>
                <td>
                  {val && typeof val === "object" && (val as { secret?: boolean }).secret ? (
                    <Secret
                      name={name}
                      reveal={() =>
                        call(
                          api.POST("/v1/stacks/{id}/outputs/{job}/{n}/{name}/reveal", {
                            params: { path: { id, job, n: String(e.execution), name }, header: { "Idempotency-Key": idempotencyKey() } },
                          }),
                        )
                      }
                    />
                  ) : (
                    <code>{typeof val === "string" ? val : JSON.stringify(val)}</code>
                  )}
                </td>
              </tr>
            )),
          )}
        </tbody>
      ))}
    </table>
  );
}

/** useHistory is the stack's state history (the history section and the force-removal note share it). */
function useHistory(id: string) {
  return useQuery({
    queryKey: ["stack", id, "history"],
    queryFn: () => call(api.GET("/v1/stacks/{id}/history", { params: { path: { id }, query: { limit: "50" } } })),
  });
}

/** forceRemoved says whether a history ends in a force-removal, whose manifest is then asked for. */
export function forceRemoved(items: { to: string; error: string | null }[]): boolean {
  const last = items.at(-1);
  return last?.to === "removed" && !!last.error?.startsWith("force-removed");
}

function HistoryView({ id, now }: { id: string; now: number }) {
  const history = useHistory(id);
  const runs = useQuery({
    queryKey: ["stack", id, "runs"],
    queryFn: () => call(api.GET("/v1/stacks/{id}/runs", { params: { path: { id }, query: { limit: "20" } } })),
  });
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

/** ManifestView lists what a force-remove leaves behind. */
function ManifestView({ m }: { m: Manifest }) {
  return (
    <div className="manifest">
      <table>
        <caption>VMs left running</caption>
        <thead>
          <tr>
            <th scope="col">VM</th>
            <th scope="col">Name</th>
            <th scope="col">Node</th>
            <th scope="col">Pool</th>
            <th scope="col">Execution</th>
          </tr>
        </thead>
        <tbody>
          {m.vms.length === 0 && (
            <tr>
              <td colSpan={5} className="muted">
                none
              </td>
            </tr>
          )}
          {m.vms.map((v) => (
            <tr key={`${v.proxmox_server_id}/${v.vm_id}`} data-vm={v.vm_id}>
              <td>{v.vm_id}</td>
              <td>{v.name}</td>
              <td>{v.node}</td>
              <td>{v.pool}</td>
              <td>{machineLabel(v.job, v.execution)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Addresses freed although a VM may still use them</h3>
      {m.addresses.length ? (
        <ul>
          {m.addresses.map((a) => (
            <li key={a.id}>
              {a.name} ({a.ip})
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">none</p>
      )}
      <h3>Terraform workspaces left</h3>
      {m.workspaces.length ? (
        <ul>
          {m.workspaces.map((w) => (
            <li key={w}>
              <code>{w}</code>
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">none</p>
      )}
      {m.nagios_hosts.length > 0 && (
        <>
          <h3>Nagios hosts left</h3>
          <ul>
            {m.nagios_hosts.map((h) => (
              <li key={h}>{h}</li>
            ))}
          </ul>
        </>
      )}
      {m.action_instances.length > 0 && (
        <>
          <h3>Action instances left (not undone)</h3>
          <ul>
            {m.action_instances.map((a) => (
              <li key={a.id}>
                {a.action} #{a.number} (v{a.template_version}, workspace <code>{a.workspace}</code>)
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

/** downloadManifest saves a manifest as JSON through a link: nothing leaves the browser. */
function downloadManifest(m: Manifest) {
  const url = URL.createObjectURL(new Blob([JSON.stringify(m, null, 2)], { type: "application/json" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = `abandon-manifest-${m.stack_name}.json`;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** AbandonManifestLink downloads what a force-remove recorded (admins; 404 when none was). */
function AbandonManifestLink({ id }: { id: string }) {
  const m = useQuery({
    queryKey: ["stack", id, "abandon-manifest"],
    retry: false,
    queryFn: () => call(api.GET("/v1/stacks/{id}/abandon-manifest", { params: { path: { id } } })),
  });
  if (!m.data) return null;
  return (
    <p>
      It was force-removed: {manifestSummary(m.data)} were left behind.{" "}
      <button type="button" className="link" onClick={() => downloadManifest(m.data!)}>
        Download the abandon manifest
      </button>
    </p>
  );
}

/** onEnter confirms a typed-name box from the keyboard: Enter does what the button does, once it may. */
export function onEnter(ok: boolean, confirm: () => void) {
  return (e: React.KeyboardEvent<HTMLInputElement>) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    if (ok) confirm();
  };
}
