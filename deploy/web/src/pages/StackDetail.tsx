// A stack: header, the buttons its allowed_actions permit, the pipeline of its latest run (or a
// chosen one), the live log, the outputs (secret ones behind Copy and Reveal), its actions
// (their forms, instances and runs: ../actions), its drift (../drift) and its history.
// Remove confirms with what happens, in order (a built stack wants its name typed); force-remove
// (admins, failed stacks) lists every VM, address and workspace left behind, offers the abandon
// manifest for download, and wants the name typed too.
// Everything refreshes from GET /v1/events (the shell invalidates ["stack", id]); no polling.
import { actionInstancesQuery, pipelineQuery, stackKey, stackQuery, stacksKey } from "../api/queries/stacks";
import { versionQuery } from "../api/queries/templates";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import { api, ApiError, call, type Card, type Pipeline } from "../api/client";
import { useMe } from "../api/queries/me";
import { useNow } from "../now";
import { LogView, stackLog } from "../log/LogView";
import { notCopiedKey } from "../stacks/duplicate";
import { PipelineView } from "../pipeline/PipelineView";
import { href, navigate, useRoute } from "../router";
import { ConfirmDialog, Menu, ProblemBox, runKindLabel, StateBadge, when } from "./common";
import { busyReason, manifestSummary, removeSteps, type Manifest } from "../plan/plan";
import { nameOf, useEnvironments, useTemplates } from "./lookups";
import { ActionsSection } from "../actions/ActionsView";
import { DriftSection } from "../drift/DriftView";
import { OutputsView } from "./stack/Outputs";
import { HistoryView, forceRemoved, useHistory } from "./stack/History";
import { AbandonManifestLink, ManifestView, downloadManifest } from "./stack/Removal";

export function StackDetail({ id }: { id: string }) {
  const qc = useQueryClient();
  const { query } = useRoute();
  const runParam = query.get("run") ?? "";
  const now = useNow();
  const stack = useQuery(stackQuery(id));
  const s = stack.data;
  // Asked for beside the stack, not after it: the log waits for the pipeline's run. Only a
  // stack known to be a draft (which has none) is not asked.
  const pipeline = useQuery({ ...pipelineQuery(id, runParam), enabled: s?.state !== "draft" });
  const version = useQuery(versionQuery(s?.template_id, s?.template_version));
  const instances = useQuery({ ...actionInstancesQuery(id), enabled: !!s && s.state !== "draft" });
  const templates = useTemplates();
  const envs = useEnvironments();
  const history = useHistory(id);
  const me = useMe();
  const [confirm, setConfirm] = useState<"" | "cancel" | "remove" | "force">("");
  // The log's props stay the same objects while what they say does: the clock re-renders the
  // page every second, and the log (memoized) is then left alone.
  const logSource = useMemo(() => stackLog(id), [id]);
  // The log's filter offers every machine a job has had (an older run's lines may be of one
  // removed since), by its index.
  const jobs = useMemo(
    () =>
      Object.entries(s?.jobs ?? {}).map(([job, j]) => ({
        job,
        executions: [...new Set(j.executions.map((e) => e.index))].sort((a, b) => a - b),
      })),
    [s?.jobs],
  );
  const names = useMemo(() => stepNames(pipeline.data), [pipeline.data]);
  const [manifest, setManifest] = useState<Manifest | null>(null);

  // A run chosen in the history is shown where its pipeline starts, once it is loaded.
  const pipelineHead = useRef<HTMLHeadingElement>(null);
  const shownRun = pipeline.data?.run.id;
  const lineParam = query.get("line");
  useEffect(() => {
    if (runParam && shownRun === runParam && !lineParam) pipelineHead.current?.scrollIntoView?.({ block: "start" });
  }, [runParam, shownRun, lineParam]);

  /** action does what a button asks; one that starts a run then shows the stack's latest run. */
  const action = useMutation({
    mutationFn: ({ fn }: { fn: () => Promise<unknown>; startsRun?: boolean }) => fn(),
    onMutate: (): void => preview.reset(),
    onSuccess: (_, { startsRun }) => {
      setConfirm("");
      if (startsRun && runParam) navigate(`/stacks/${id}`);
      void qc.invalidateQueries({ queryKey: stackKey(id) });
      void qc.invalidateQueries({ queryKey: stacksKey });
    },
    onError: (e) => {
      if (e instanceof ApiError && e.status === 412) void qc.invalidateQueries({ queryKey: stackKey(id) });
    },
  });
  const act = (fn: () => Promise<unknown>, startsRun = false) => action.mutate({ fn, startsRun });
  /** confirmed is act for a confirmation dialog: it stays open on a refusal, shown below it. */
  const confirmed = (fn: () => Promise<unknown>) => () => action.mutateAsync({ fn }).catch(() => undefined);
  // The preview changes nothing: what would be left behind, before anything is confirmed.
  const preview = useMutation({
    mutationFn: () => call(api.POST("/v1/stacks/{id}/force-remove", { params: { path: { id } }, body: {} })),
    onMutate: (): void => action.reset(),
    onSuccess: (r) => {
      setManifest(r.manifest);
      setConfirm("force");
    },
  });
  const retry = (mode: "failed" | "force" | "all") =>
    act(() => call(api.POST("/v1/stacks/{id}/retry", { params: { path: { id } }, body: { mode } })), true);
  const runAgain = (c: Card) =>
    act(
      () =>
        call(
          api.POST("/v1/stacks/{id}/jobs/{job}/executions/{n}/run-again", {
            params: { path: { id, job: c.job, n: String(c.execution ?? 0) } },
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
  const doRemove = confirmed(async () => {
    await call(api.DELETE("/v1/stacks/{id}", { params: { path: { id } } }));
    if (!built) navigate("/stacks");
  });
  const doForce = confirmed(async () => {
    const r = await call(api.POST("/v1/stacks/{id}/force-remove", { params: { path: { id } }, body: { confirm: true } }));
    downloadManifest(r.manifest);
  });
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
              onClick={() => void act(() => call(api.POST("/v1/stacks/{id}/deploy", { params: { path: { id } } })), true)}
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
                void act(async () => {
                  const d = await call(api.POST("/v1/stacks/{id}/duplicate", { params: { path: { id } }, body: {} }));
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
            <button type="button" className="danger" onClick={() => setConfirm("remove")}>
              Remove
            </button>
          )}
          {allowed.has("force_remove") && (
            <button type="button" className="danger" onClick={() => preview.mutate()}>
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
            onClick={() => void act(() => call(api.POST("/v1/stacks/{id}/cancel", { params: { path: { id } } })))}
          >
            Yes, cancel the run
          </button>
          <button type="button" onClick={() => setConfirm("")}>
            No
          </button>
        </div>
      )}
      {confirm === "remove" && (
        <ConfirmDialog
          title={built ? `Remove ${s.name}? In order:` : `Remove the draft ${s.name}?`}
          what="stack"
          name={built ? s.name : undefined}
          confirm="Yes, remove"
          run={doRemove}
          onCancel={() => setConfirm("")}
        >
          <ol>
            {steps.map((t, i) => (
              <li key={i}>{t}</li>
            ))}
          </ol>
        </ConfirmDialog>
      )}
      {confirm === "force" && manifest && (
        <ConfirmDialog
          title={`Force-remove ${s.name}? Horizon forgets it and destroys nothing.`}
          what="stack"
          name={s.name}
          confirm="Yes, force-remove"
          run={doForce}
          onCancel={() => setConfirm("")}
        >
          <p>Left behind for you to clean up by hand: {manifestSummary(manifest)}.</p>
          <ManifestView m={manifest} />
          <p>
            <button type="button" className="link" onClick={() => downloadManifest(manifest)}>
              Download the abandon manifest
            </button>
          </p>
        </ConfirmDialog>
      )}
      <ProblemBox error={action.error ?? preview.error} />
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
              source={logSource}
              runId={pipeline.data?.run.id}
              follow={!runParam}
              jobs={jobs}
              lineLink={query.get("line") ?? undefined}
              stepNames={names}
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
