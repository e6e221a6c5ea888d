// Create, edit a draft, and edit a deployed (or failed) stack. Pick an active template and
// version, team, environment and name; then the version's form, drawn by FormRenderer. For a
// draft, "Save draft" creates (POST) or saves (PATCH with If-Match) it, and the server's
// problems appear on their fields; "Deploy" saves, then starts the deploy run and opens the
// stack. For a deployed stack, every change of the form is planned (POST /plan, debounced) and
// the plan is shown as counts and causes (PlanView); the button reads "Save and re-apply" when
// the plan runs Terraform (a plan that destroys machines wants the stack's name typed) and
// "Save" when only name, description or labels changed (no run). The template version, team
// and environment are read-only there; while a run is in progress the form is disabled with
// the reason. A stale save (412) reloads the stack and names what changed.
import { stackEditQuery, stackKey, stackQuery, stacksKey, usageQuery } from "../api/queries/stacks";
import { formQuery, versionQuery } from "../api/queries/templates";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import { api, ApiError, call, type Stack, type TemplateForm } from "../api/client";
import { FieldErrorList, FormRenderer } from "../form/FormRenderer";
import {
  changedFields,
  deployProblems,
  emptyOptions,
  errorsFor,
  fieldErrors,
  fieldLabel,
  formStart,
  fromStack,
  problemsAtPositions,
  knownFields,
  labelsOf,
  toJobs,
  unplaced,
  type FormValues,
} from "../form/model";
import { useMe } from "../api/queries/me";
import { notCopiedKey, type NotCopied } from "../stacks/duplicate";
import { navigate } from "../router";
import { PlanView } from "../plan/PlanView";
import { busyReason, needsTypedName, saveKind, saveLabel, typedNameMatches, type Names, type Plan } from "../plan/plan";
import { plural, ProblemBox, useDebounced } from "./common";
import { VersionChanges } from "./Templates";
import { useEnvironments, useTeams, useTemplates } from "./lookups";
import { useFormOptions } from "./options";
import { quotaHints, stackCost } from "../quota/usage";
import { ChangedMeanwhile, DuplicateNotice, ErrorSummary, QuotaHints } from "./create/Notices";

export function CreateStack({ stackId }: { stackId?: string }) {
  const qc = useQueryClient();
  const me = useMe();
  const templates = useTemplates();
  const envs = useEnvironments();
  const teams = useTeams();
  // An existing draft, with its ETag for If-Match.
  const existing = useQuery(stackEditQuery(stackId));
  const stack = existing.data?.stack;
  // Set by the stack page's Duplicate: what the copy left out.
  const duplicated = stackId ? qc.getQueryData<{ from: string; items: NotCopied[] }>(notCopiedKey(stackId)) : undefined;
  // What was changed here. Until then the form shows the stack as last read (or a new stack's
  // defaults): the template, version, team and environment are the stack's own, else the only
  // one there is (a new stack's version: its template's latest). Reading the stack again (a
  // save, a stale save's reload, the end of a run) starts from it again: see took.
  const [templatePicked, setTemplateId] = useState("");
  const [versionPicked, setVersion] = useState(0);
  const [edits, setValues] = useState<FormValues | null>(null);
  const [edited, setHeader] = useState<Partial<Header>>({});
  const [problemsSet, setProblemsAs] = useState<Problems | null>(null);
  // A request's 422 errors name executions by their place in the request, the stack's own
  // problems by their index: the latter are moved to the form's places when shown.
  const setProblems = (p: { field: string; message: string }[]) => setProblemsAs(p);
  const setStackProblems = (p: { field: string; message: string }[]) => setProblemsAs(byIndex(p));
  const problems = useMemo(() => problemsSet ?? byIndex(stack?.problems ?? []), [problemsSet, stack]);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState<string>("");
  const [saved, setSaved] = useState("");
  const [changed, setChanged] = useState<string[]>([]);
  // Bumped when a deploy or a save is refused: the error summary takes the focus, in view.
  const [refused, setRefused] = useState(0);
  const summary = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!refused || !summary.current) return;
    summary.current.focus();
    summary.current.scrollIntoView?.({ block: "start" });
  }, [refused]);

  const active = templates.data?.items.filter((t) => t.active) ?? [];
  const myTeams = teams.data?.items.filter((t) => me.data?.role === "admin" || me.data?.teams.includes(t.id)) ?? [];

  const only = <T,>(xs: T[] | undefined) => (xs?.length === 1 ? xs[0] : undefined);
  const templateId = templatePicked || stack?.template_id || only(active)?.id || "";
  const template = templates.data?.items.find((t) => t.id === templateId);
  const version = versionPicked || stack?.template_version || template?.latest_version || 0;
  const header: Header = {
    name: edited.name ?? stack?.name ?? "",
    description: edited.description ?? stack?.description ?? "",
    labels: edited.labels ?? stack?.labels.join(", ") ?? "",
    team_id: edited.team_id || stack?.team_id || only(myTeams)?.id || "",
    environment_id: edited.environment_id || stack?.environment_id || only(envs.data?.items)?.id || "",
  };

  const form = useQuery(formQuery(templateId, version));
  // What a stack that is not deployed yet would take of its team's quotas, as the user types
  // (a deployed stack's edit shows its delta in the plan instead).
  const definition = useQuery(versionQuery(templateId, version));
  const usage = useQuery(usageQuery(header.team_id));
  const opts = useFormOptions(header.environment_id, stack);
  const options = opts.data ?? emptyOptions;
  // The form's values: as changed here, else as the stack (or a new stack's defaults) has them.
  const start = useMemo(
    () => formStart(form.data, header.environment_id ? opts.data : emptyOptions, !!stackId, stack),
    [form.data, opts.data, header.environment_id, stackId, stack],
  );
  const values = edits ?? start;

  // A deployed (or failed) stack: its live state (the events stream refreshes ["stack", id])
  // says whether a run is in progress; edits are planned as they are made.
  const live = !!stack && stack.state !== "draft";
  // An admin choosing another version of a deployed stack's template plans its upgrade.
  const admin = me.data?.role === "admin";
  const upgrading = live && version > 0 && version !== stack!.template_version;
  const liveStack = useQuery({ ...stackQuery(stackId ?? ""), enabled: live });
  const busy_ = live ? busyReason(liveStack.data ?? stack) : "";
  const wasBusy = useRef(busy_);
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs only when the stack stops being busy
  useEffect(() => {
    // The run ended: the form starts again from the stack as it is now.
    if (wasBusy.current && !busy_) {
      setVersion(0);
      setHeader({});
      setProblemsAs(null);
      setValues(null);
      void existing.refetch();
    }
    wasBusy.current = busy_;
  }, [busy_]);
  const [typed, setTyped] = useState("");
  const planBody =
    live && form.data && values && !busy_
      ? JSON.stringify(
          upgrading
            ? { template_version: version, jobs: toJobs(values, form.data) }
            : {
                name: header.name,
                description: header.description,
                labels: labelsOf({ ...values, labels: header.labels }),
                jobs: toJobs(values, form.data),
              },
        )
      : "";
  const debouncedBody = useDebounced(planBody, 400);
  const plan = useQuery({
    queryKey: ["plan", stackId, existing.data?.etag, debouncedBody],
    enabled: live && !!debouncedBody && debouncedBody === planBody,
    retry: false,
    gcTime: 0,
    placeholderData: (prev) => prev,
    queryFn: () => call(api.POST("/v1/stacks/{id}/plan", { params: { path: { id: stackId! } }, body: JSON.parse(debouncedBody) })),
  });
  const planCurrent = !!plan.data && !plan.isPlaceholderData && !plan.isFetching && debouncedBody === planBody;
  const plainChanged =
    !!stack &&
    !!values &&
    (header.name !== stack.name ||
      header.description !== stack.description ||
      labelsOf({ ...values!, labels: header.labels }).join(",") !== stack.labels.join(","));
  const kind = saveKind(plan.data as Plan | undefined, plainChanged);
  const runs = upgrading ? !!plan.data?.run_needed : kind === "reapply";
  const mustType = needsTypedName(plan.data as Plan | undefined);
  // biome-ignore lint/correctness/useExhaustiveDependencies: setProblems is a plain wrapper of a state setter
  useEffect(() => {
    // The plan's problems are where the save would fail: shown on their fields as they appear.
    if (!live) return;
    if (plan.data) setProblems(plan.data.problems);
    else if (plan.error instanceof ApiError && plan.error.status === 422) setProblems(plan.error.problem.errors ?? []);
  }, [plan.data, plan.error, live]);
  const names: Names = (field, id) => {
    const list =
      field === "address_id"
        ? options.addresses
        : field === "ssh_key_id"
          ? options.sshKeys
          : field === "proxmox_server_id"
            ? options.servers
            : field === "iso_id"
              ? options.isos
              : [];
    return list.find((o) => o.value === id)?.label;
  };

  const shownProblems = useMemo(
    () => problems.map((p) => (p.byIndex && values ? problemsAtPositions([p], values)[0] : p)),
    [problems, values],
  );
  const errs = useMemo(() => fieldErrors(shownProblems), [shownProblems]);
  const known = form.data && values ? knownFields(form.data, values, options) : new Set<string>();
  const others = unplaced(errs, known);
  const labelList = labelsOf({ ...(values ?? ({} as FormValues)), labels: header.labels });
  const labelOf = (field: string) => fieldLabel(field, form.data, values, labelList);
  // A label's own errors (labels[2]) are shown on the Labels field, naming the label.
  const labelErrs = errorsFor(errs, "labels").concat(
    others.filter((o) => /^labels\[\d+\]$/.test(o.field)).map((o) => `${labelOf(o.field)} ${o.message}`),
  );

  // A save's answer (or a stale save's reload) is the stack as it is now: the form starts again
  // from it, and the executions new in the save have their ids (the next save must name them,
  // or it would add more).
  const took = (s: Stack, f: TemplateForm) => {
    setVersion(0);
    setHeader({});
    setStackProblems(s.problems);
    setValues(fromStack(s, f, options));
  };
  const keep = (s: Stack, etag: string | null) => qc.setQueryData(stackEditQuery(s.id).queryKey, { stack: s, etag: etag ?? "" });

  const save = async (): Promise<Stack | null> => {
    if (!form.data || !values) return null;
    setError(null);
    setSaved("");
    setChanged([]);
    const jobs = toJobs(values, form.data);
    try {
      let s: Stack;
      if (!stackId) {
        s = await call(
          api.POST("/v1/stacks", {
            body: {
              team_id: header.team_id,
              name: header.name,
              description: header.description,
              labels: labelsOf({ ...values, labels: header.labels }),
              environment_id: header.environment_id,
              template_id: templateId,
              template_version: version,
              jobs,
            },
          }),
        );
        took(s, form.data);
        navigate(`/stacks/${s.id}/edit`, undefined, true);
      } else if (upgrading) {
        // Jobs the version drops are destroyed first; new jobs go with their answers.
        const r = await api.POST("/v1/stacks/{id}/upgrade-template", {
          params: { path: { id: stackId }, header: { "If-Match": existing.data!.etag } },
          body: { version, jobs: toJobs(values, form.data) },
        });
        const out = await call(Promise.resolve(r));
        void qc.invalidateQueries({ queryKey: stacksKey });
        void qc.invalidateQueries({ queryKey: stackKey(stackId) });
        if (r.response.status === 202) {
          navigate(`/stacks/${stackId}`);
          return null;
        }
        s = out as Stack;
        keep(s, r.response.headers.get("ETag"));
        took(s, form.data);
        setSaved(`Moved to v${version}; nothing had to run.`);
        return s;
      } else if (live) {
        // Plain fields alone save without a run; an edit the plan runs Terraform for goes
        // with its jobs and confirm, and the run opens on the stack's page.
        const body =
          kind === "reapply"
            ? { ...JSON.parse(planBody), confirm: true }
            : { name: header.name, description: header.description, labels: labelsOf({ ...values, labels: header.labels }) };
        const r = await api.PATCH("/v1/stacks/{id}", {
          params: { path: { id: stackId }, header: { "If-Match": existing.data!.etag } },
          body,
        });
        const out = await call(Promise.resolve(r));
        void qc.invalidateQueries({ queryKey: stacksKey });
        void qc.invalidateQueries({ queryKey: stackKey(stackId) });
        if (r.response.status === 202) {
          navigate(`/stacks/${stackId}`);
          return null;
        }
        s = out as Stack;
        keep(s, r.response.headers.get("ETag"));
        took(s, form.data);
        setSaved("Saved; nothing had to run.");
        return s;
      } else {
        const r = await api.PATCH("/v1/stacks/{id}", {
          params: { path: { id: stackId }, header: { "If-Match": existing.data!.etag } },
          body: {
            name: header.name,
            description: header.description,
            labels: labelsOf({ ...values, labels: header.labels }),
            environment_id: header.environment_id,
            template_version: version,
            jobs,
          },
        });
        s = (await call(Promise.resolve(r))) as Stack;
        keep(s, r.response.headers.get("ETag"));
        took(s, form.data);
      }
      setSaved(
        s.problems.length
          ? `Draft saved; ${plural(s.problems.length, "thing")} to fix before it can deploy.`
          : "Draft saved; it is ready to deploy.",
      );
      void qc.invalidateQueries({ queryKey: stacksKey });
      return s;
    } catch (e) {
      if (e instanceof ApiError && e.status === 422) {
        setProblems(e.problem.errors ?? []);
        setRefused((n) => n + 1);
      }
      if (e instanceof ApiError && e.status === 412) {
        // Changed meanwhile: reload it and say what changed (the edits made here are lost).
        const fresh = await existing.refetch();
        if (fresh.data && form.data) {
          setTyped("");
          setChanged(changedFields({ ...values, ...header }, fromStack(fresh.data.stack, form.data, options)));
          took(fresh.data.stack, form.data);
        }
      }
      setError(e);
      return null;
    }
  };

  const deploy = async () => {
    if (!form.data || !values) return;
    // What the form can tell is missing is flagged at once, on every field, before anything
    // is saved: the server would refuse the first problem of a new stack (its name) alone.
    const missing = deployProblems(form.data, values, header);
    if (missing.length) {
      setSaved("");
      setProblems(missing);
      setRefused((n) => n + 1);
      return;
    }
    setBusy("deploy");
    try {
      const s = await save();
      if (!s) return;
      await call(api.POST("/v1/stacks/{id}/deploy", { params: { path: { id: s.id } } }));
      void qc.invalidateQueries({ queryKey: stacksKey });
      navigate(`/stacks/${s.id}`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 422) {
        setProblems(e.problem.errors ?? []);
        setRefused((n) => n + 1);
      }
      setError(e);
    } finally {
      setBusy("");
    }
  };

  if (stackId && existing.isLoading) return <p>Loading…</p>;
  if (stack && stack.state === "removed")
    return (
      <p>
        This stack is removed; it cannot be edited. <a href={`#/stacks/${stack.id}`}>Open it</a>.
      </p>
    );
  const versions = template ? Array.from({ length: template.latest_version }, (_, i) => template.latest_version - i) : [];
  return (
    <>
      <div className="page-head">
        <h1>{live ? `Edit ${stack?.name ?? ""}` : stackId ? `Draft ${stack?.name ?? ""}` : "New stack"}</h1>
        {live && <a href={`#/stacks/${stackId}`}>Back to the stack</a>}
      </div>
      {busy_ && (
        <p className="notice" role="status">
          {busy_}
        </p>
      )}
      {duplicated && <DuplicateNotice from={duplicated.from} items={duplicated.items} />}
      <ProblemBox error={existing.error ?? templates.error ?? form.error ?? opts.error} />
      {problems.length > 0 && (
        <ErrorSummary
          ref={summary}
          live={live}
          count={problems.length}
          items={shownProblems.map((o) => ({ label: labelOf(o.field), message: o.message }))}
        />
      )}
      <form
        className="stack-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          setBusy("save");
          void save().finally(() => setBusy(""));
        }}
      >
        <fieldset className="plain" disabled={!!busy_}>
          <fieldset className="basics">
            <legend>Stack</legend>
            <div className="grid">
              <div className="field">
                <label htmlFor="f-template">Template *</label>
                <select
                  id="f-template"
                  value={templateId}
                  disabled={!!stackId}
                  onChange={(e) => {
                    setTemplateId(e.target.value);
                    setVersion(0);
                    setValues(null);
                  }}
                >
                  {active.length !== 1 && <option value="">Choose…</option>}
                  {active.map((t) => (
                    <option key={t.id} value={t.id}>
                      {t.name}
                    </option>
                  ))}
                </select>
                {template?.description && <span className="hint">{template.description}</span>}
              </div>
              <div className="field">
                <label htmlFor="f-version">Version *</label>
                <select
                  id="f-version"
                  value={version || ""}
                  disabled={live && !admin}
                  aria-describedby={live && admin ? "f-version-hint" : undefined}
                  onChange={(e) => {
                    setVersion(Number(e.target.value));
                    // A new stack's form, or a deployed stack's upgrade, starts again.
                    if (!stack || live) setValues(null);
                    if (live) setTyped("");
                  }}
                >
                  {versions.map((v) => (
                    <option key={v} value={v}>
                      v{v}
                      {v === template?.latest_version ? " (latest)" : ""}
                    </option>
                  ))}
                </select>
                {live && admin && (
                  <span className="hint" id="f-version-hint">
                    Another version plans the stack's upgrade.
                  </span>
                )}
                <FieldErrorList msgs={errorsFor(errs, "template_version").concat(errorsFor(errs, "version"))} />
              </div>
              <div className="field">
                <label htmlFor="f-name">Name *</label>
                <input id="f-name" value={header.name} maxLength={100} onChange={(e) => setHeader({ ...edited, name: e.target.value })} />
                <FieldErrorList msgs={errorsFor(errs, "name")} />
              </div>
              <div className="field">
                <label htmlFor="f-team">Team *</label>
                <select
                  id="f-team"
                  value={header.team_id}
                  disabled={!!stackId}
                  onChange={(e) => setHeader({ ...edited, team_id: e.target.value })}
                >
                  {myTeams.length !== 1 && <option value="">Choose…</option>}
                  {myTeams.map((t) => (
                    <option key={t.id} value={t.id}>
                      {t.name}
                    </option>
                  ))}
                </select>
                <FieldErrorList msgs={errorsFor(errs, "team_id")} />
              </div>
              <div className="field">
                <label htmlFor="f-env">Environment *</label>
                <select
                  id="f-env"
                  value={header.environment_id}
                  disabled={!!stack?.deployed_at}
                  onChange={(e) => setHeader({ ...edited, environment_id: e.target.value })}
                >
                  {envs.data?.items.length !== 1 && <option value="">Choose…</option>}
                  {envs.data?.items.map((t) => (
                    <option key={t.id} value={t.id}>
                      {t.name}
                    </option>
                  ))}
                </select>
                <FieldErrorList msgs={errorsFor(errs, "environment_id")} />
              </div>
              <div className="field">
                <label htmlFor="f-labels">Labels</label>
                <input
                  id="f-labels"
                  value={header.labels}
                  aria-describedby="f-labels-hint"
                  aria-invalid={labelErrs.length > 0}
                  onChange={(e) => setHeader({ ...edited, labels: e.target.value })}
                />
                <span className="hint" id="f-labels-hint">
                  {LABELS_HINT}
                </span>
                <FieldErrorList msgs={labelErrs} />
              </div>
              <div className="field wide">
                <label htmlFor="f-desc">Description</label>
                <textarea
                  id="f-desc"
                  rows={2}
                  value={header.description}
                  onChange={(e) => setHeader({ ...edited, description: e.target.value })}
                />
                <FieldErrorList msgs={errorsFor(errs, "description")} />
              </div>
            </div>
          </fieldset>
          {!live && form.data && values && definition.data && usage.data && (
            <QuotaHints
              hints={quotaHints(stackCost(definition.data.definition, toJobs(values, form.data)), usage.data, header.environment_id)}
            />
          )}
          {form.data && values ? (
            <FormRenderer form={form.data} values={values} onChange={setValues} options={options} errors={errs} />
          ) : templateId ? (
            <p>Loading the form…</p>
          ) : (
            <p className="muted">Choose a template to see its form.</p>
          )}
          <ProblemBox error={error} />
          {changed.length > 0 && <ChangedMeanwhile live={live} fields={changed} />}
          {upgrading && (
            <section className="plan" aria-label="Template changes">
              <h2>
                Changes from v{stack!.template_version} to v{version}
              </h2>
              <VersionChanges templateId={stack!.template_id} from={stack!.template_version} to={version} />
            </section>
          )}
          {live &&
            (plan.data ? (
              <PlanView plan={plan.data} names={names} usage={usage.data} environment={header.environment_id} />
            ) : plan.isFetching || planBody ? (
              <p className="muted">Planning…</p>
            ) : null)}
          {live && plan.error && !(plan.error instanceof ApiError && plan.error.status === 422) ? <ProblemBox error={plan.error} /> : null}
          {saved && (
            <p className="saved" role="status">
              {saved}
            </p>
          )}
          {mustType && planCurrent && (
            <div className="confirm block">
              <label htmlFor="f-typed">
                This save destroys {plural(plan.data!.destroy.length, "machine")}. Type the stack's name, <strong>{stack!.name}</strong>, to
                confirm:
              </label>{" "}
              <input id="f-typed" value={typed} autoComplete="off" onChange={(e) => setTyped(e.target.value)} />
            </div>
          )}
          <div className="actions sticky">
            {live ? (
              <button
                type="submit"
                className={runs ? "primary" : undefined}
                disabled={
                  !values ||
                  !!busy ||
                  (!upgrading && kind === "nothing") ||
                  !planCurrent ||
                  (runs && plan.data!.problems.length > 0) ||
                  (mustType && !typedNameMatches(typed, stack!.name))
                }
              >
                {busy === "save" ? "Saving…" : upgrading ? `Upgrade to v${version}` : saveLabel(kind)}
              </button>
            ) : (
              <>
                <button type="submit" disabled={!values || !!busy}>
                  {busy === "save" ? "Saving…" : "Save draft"}
                </button>
                <button type="button" className="primary" disabled={!values || !!busy} onClick={() => void deploy()}>
                  {busy === "deploy" ? "Deploying…" : "Deploy"}
                </button>
              </>
            )}
          </div>
        </fieldset>
      </form>
    </>
  );
}

/** Header is the stack's own fields of the form. */
type Header = Pick<FormValues, "name" | "description" | "labels" | "team_id" | "environment_id">;
type Problems = { field: string; message: string; byIndex?: boolean }[];
const byIndex = (p: { field: string; message: string }[]): Problems => p.map((x) => ({ ...x, byIndex: true }));

/** LABELS_HINT is the labels' format: they become Proxmox tags on the VMs. */
export const LABELS_HINT =
  "Comma-separated, e.g. web, eu-west. Each is a Proxmox tag: lower-case letters, digits and _ - + . (at most 64 characters).";
