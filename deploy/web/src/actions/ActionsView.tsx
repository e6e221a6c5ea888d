// A stack's actions: those its template version offers (each opens its form: parameters drawn
// like a job's, inputs prefilled from the stack's outputs and editable, a machine for a script
// action), the instances terraform actions left (undone one by one, after a confirmation) and
// the history of the action runs. A started run shows here, in a notice until it ends and in the
// history; the stack's pipeline stays its jobs' (an action's run opens by its link in the
// history). Everything refreshes from the events that invalidate ["stack", id].
import { usersQuery } from "../api/queries/lookups";
import { actionInstancesQuery, actionsQuery, runsQuery, stackKey, stacksKey } from "../api/queries/stacks";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useMemo, useState } from "react";
import { api, ApiError, call, type Stack } from "../api/client";
import { FieldErrorList, ParamInput } from "../form/FormRenderer";
import { errorsFor, fieldErrors, orderedParameters, unplaced } from "../form/model";
import { RunsTable } from "../pages/RunsTable";
import { href } from "../router";
import { Head, ProblemBox, Secret, StateBadge, when } from "../pages/common";
import {
  actionRequest,
  actionsBlocked,
  answers,
  type ActionValues,
  initialActionValues,
  inputPlaceholder,
  type InstanceRow,
  instanceRows,
  isSecretValue,
  machineChoices,
  machineOf,
  prefillSource,
  type Run,
  shown,
  type StackAction,
  undoBlocked,
} from "./actions";

const RUNS = 100;

function useUsers() {
  return useQuery(usersQuery());
}

export function ActionsSection({ stack, role }: { stack: Stack; role: string | undefined }) {
  const id = stack.id;
  const actions = useQuery(actionsQuery(id));
  const instances = useQuery(actionInstancesQuery(id));
  const runs = useQuery(runsQuery(id, "action", RUNS));
  const users = useUsers();
  const who = (uid: string | null | undefined) =>
    uid ? (users.data?.items.find((u) => u.id === uid)?.name ?? uid.slice(0, 8)) : "Horizon";
  const blocked = actionsBlocked(stack, role);
  const [open, setOpen] = useState("");
  // The run an action form started here: named in a notice until it ends.
  const [started, setStarted] = useState<{ name: string; run: string } | null>(null);
  const startedRun = started ? runs.data?.items.find((r) => r.id === started.run) : undefined;
  const notice =
    started && !(startedRun && ["succeeded", "failed", "canceled"].includes(startedRun.state))
      ? `${started.name} started (${startedRun?.state ?? "queued"}); its result goes to the history below.`
      : "";
  const reasonId = useId();
  const list = actions.data?.items ?? [];
  const rows = useMemo(
    () => instanceRows(instances.data?.items ?? [], runs.data?.items ?? [], !!runs.data && !runs.data.next_cursor),
    [instances.data, runs.data],
  );
  return (
    <section className="actions-section" aria-labelledby="actions-title">
      <h2 id="actions-title">Actions</h2>
      <ProblemBox error={actions.error} />
      {actions.data && !list.length && <p className="muted">Its template offers no action.</p>}
      {blocked && list.length > 0 && (
        <p id={reasonId} className="small muted">
          {blocked}
        </p>
      )}
      <ul className="action-list">
        {list.map((a) => (
          <li key={a.name} data-action={a.name}>
            <div className="action-head">
              <strong>{a.name}</strong> <span className="label">{a.kind}</span>
              {a.job && <span className="small muted"> on a machine of {a.job}</span>}
              <span className="grow" />
              <button
                type="button"
                disabled={!!blocked}
                aria-describedby={blocked ? reasonId : undefined}
                aria-expanded={open === a.name}
                onClick={() => {
                  setStarted(null);
                  setOpen(open === a.name ? "" : a.name);
                }}
              >
                {open === a.name ? `Close ${a.name}` : `Run ${a.name}…`}
              </button>
            </div>
            {a.description && <p className="small">{a.description}</p>}
            {open === a.name && !blocked && (
              <ActionForm
                key={a.name}
                stack={stack}
                a={a}
                onClose={() => setOpen("")}
                onStarted={(run) => {
                  setOpen("");
                  setStarted({ name: a.name, run });
                }}
              />
            )}
          </li>
        ))}
      </ul>
      <p role="status" className="small" data-testid="action-started">
        {notice}
      </p>
      <h3 id="instances-title">Instances</h3>
      <InstancesView stack={stack} rows={rows} blocked={blocked} who={who} error={instances.error ?? runs.error} />
      <h3 id="action-history-title">Action history</h3>
      <ActionHistory id={id} runs={runs.data?.items ?? []} who={who} />
    </section>
  );
}

function ActionForm({
  stack,
  a,
  onClose,
  onStarted,
}: {
  stack: Stack;
  a: StackAction;
  onClose: () => void;
  onStarted: (run: string) => void;
}) {
  const qc = useQueryClient();
  const [v, setV] = useState<ActionValues>(() => initialActionValues(a));
  const [err, setErr] = useState<unknown>(null);
  const [sending, setSending] = useState(false);
  const machines = machineChoices(a, stack);
  const baseId = useId();
  const problems = err instanceof ApiError ? (err.problem.errors ?? []) : [];
  const errs = fieldErrors(problems);
  const known = new Set<string>([
    "execution",
    ...orderedParameters(a).map(([n]) => `parameters.${n}`),
    ...a.inputs.map((i) => `inputs.${i.name}`),
  ]);
  const others = unplaced(errs, known);
  const run = async () => {
    setErr(null);
    setSending(true);
    try {
      const run = await call(
        api.POST("/v1/stacks/{id}/actions/{name}", {
          params: { path: { id: stack.id, name: a.name } },
          body: actionRequest(a, v),
        }),
      );
      void qc.invalidateQueries({ queryKey: stackKey(stack.id) });
      void qc.invalidateQueries({ queryKey: stacksKey });
      onStarted(run.id);
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) void qc.invalidateQueries({ queryKey: stackKey(stack.id) });
      setErr(e);
    } finally {
      setSending(false);
    }
  };
  return (
    <form
      className="action-form"
      aria-label={`Run ${a.name}`}
      onSubmit={(e) => {
        e.preventDefault();
        void run();
      }}
    >
      {!problems.length && <ProblemBox error={err} />}
      {others.length > 0 && <FieldErrorList msgs={others.map((o) => `${o.field}: ${o.message}`)} />}
      {a.kind === "script" && (
        <div className={errorsFor(errs, "execution").length ? "field has-error" : "field"}>
          <label htmlFor={`${baseId}-machine`}>Machine *</label>
          <select
            id={`${baseId}-machine`}
            value={v.execution === null ? "" : String(v.execution)}
            aria-invalid={errorsFor(errs, "execution").length > 0}
            onChange={(e) => setV({ ...v, execution: e.target.value === "" ? null : Number(e.target.value) })}
          >
            {v.execution === null && <option value="">Choose…</option>}
            {machines.map((m) => (
              <option key={m.index} value={m.index} disabled={!m.built}>
                {m.label}
              </option>
            ))}
          </select>
          <span className="hint">The script runs on this machine of {a.job}; only built machines can be picked.</span>
          <FieldErrorList msgs={errorsFor(errs, "execution")} />
        </div>
      )}
      {orderedParameters(a).length > 0 && (
        <fieldset className="grid">
          <legend>Parameters</legend>
          {orderedParameters(a).map(([name, p]) => (
            <ParamInput
              key={name}
              name={name}
              p={p}
              required={a.parameters.required?.includes(name) ?? false}
              value={v.parameters[name] ?? ""}
              onChange={(val) => setV({ ...v, parameters: { ...v.parameters, [name]: val } })}
              errors={errorsFor(errs, `parameters.${name}`)}
            />
          ))}
        </fieldset>
      )}
      {a.inputs.length > 0 && (
        <fieldset className="grid">
          <legend>Inputs (prefilled from the stack's outputs)</legend>
          {a.inputs.map((i) => {
            const fid = `${baseId}-in-${i.name}`;
            const ie = errorsFor(errs, `inputs.${i.name}`);
            return (
              <div key={i.name} className={ie.length ? "field has-error" : "field"} data-input={i.name}>
                <label htmlFor={fid}>{i.name}</label>
                <input
                  id={fid}
                  type={i.secret ? "password" : "text"}
                  autoComplete={i.secret ? "new-password" : "off"}
                  placeholder={inputPlaceholder(i)}
                  aria-describedby={`${fid}-from`}
                  aria-invalid={ie.length > 0}
                  value={v.inputs[i.name] ?? ""}
                  onChange={(e) => setV({ ...v, inputs: { ...v.inputs, [i.name]: e.target.value } })}
                />
                <span className="hint" id={`${fid}-from`}>
                  {prefillSource(i)}
                </span>
                <FieldErrorList msgs={ie} />
              </div>
            );
          })}
        </fieldset>
      )}
      <div className="actions">
        <button type="submit" className="primary" disabled={sending || (a.kind === "script" && v.execution === null)}>
          {sending ? "Starting…" : `Start ${a.name}`}
        </button>
        <button type="button" onClick={onClose}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function InstancesView({
  stack,
  rows,
  blocked,
  who,
  error,
}: {
  stack: Stack;
  rows: InstanceRow[];
  blocked: string;
  who: (id: string | null | undefined) => string;
  error: unknown;
}) {
  const qc = useQueryClient();
  const [confirm, setConfirm] = useState("");
  const [err, setErr] = useState<unknown>(null);
  const undo = async (iid: string) => {
    setErr(null);
    try {
      await call(
        api.DELETE("/v1/stacks/{id}/action-instances/{iid}", {
          params: { path: { id: stack.id, iid } },
        }),
      );
      setConfirm("");
      void qc.invalidateQueries({ queryKey: stackKey(stack.id) });
    } catch (e) {
      setErr(e);
      void qc.invalidateQueries({ queryKey: stackKey(stack.id) });
    }
  };
  const label = (r: InstanceRow) => `${r.action}${r.number !== null ? ` #${r.number}` : ""}`;
  const target = rows.find((r) => r.id === confirm);
  return (
    <div className="instances">
      <ProblemBox error={error ?? err} />
      {target && (
        <div className="confirm" role="alertdialog" aria-labelledby="undo-text">
          <p id="undo-text">
            Undo {label(target)}? Terraform destroys what it made, with the code of template version {target.instance?.template_version}.
            The other instances stay.
          </p>
          {/* The safe answer has the focus: Enter on a confirmation destroys nothing. */}
          <button type="button" className="danger" onClick={() => void undo(target.id)}>
            Yes, undo {label(target)}
          </button>
          <button type="button" autoFocus onClick={() => setConfirm("")}>
            No
          </button>
        </div>
      )}
      {rows.length === 0 ? (
        <p className="muted">No instance: a terraform action that runs leaves one here, to be undone on its own.</p>
      ) : (
        <table aria-labelledby="instances-title">
          <Head cols={["Instance", "State", "Answers", "Outputs", "Made", "Undo"]} />
          <tbody>
            {rows.map((r) => {
              const why = r.instance ? undoBlocked(r.instance, blocked) : "";
              return (
                <tr key={r.id} data-instance={label(r)} data-state={r.state}>
                  <th scope="row">{label(r)}</th>
                  <td>
                    <StateBadge state={r.state} />
                  </td>
                  <td>
                    <code>{answers(r.parameters, r.inputs)}</code>
                  </td>
                  <td>
                    <Outputs id={stack.id} run={r.runId} outputs={r.outputs} />
                  </td>
                  <td>
                    {who(r.createdBy)}, {when(r.createdAt)}
                    {r.state === "undone" && (
                      <div className="small muted">
                        undone by {who(r.undoneBy)}, {when(r.undoneAt)}
                      </div>
                    )}
                  </td>
                  <td>
                    {r.state === "undone" ? (
                      <span className="muted">undone</span>
                    ) : why ? (
                      <>
                        <button type="button" disabled aria-describedby={`why-${r.id}`}>
                          Undo {label(r)}
                        </button>
                        <div id={`why-${r.id}`} className="small muted">
                          {why}
                        </div>
                      </>
                    ) : (
                      <button type="button" className="danger" onClick={() => setConfirm(r.id)}>
                        Undo {label(r)}
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** Outputs of an action run: plain values shown, secret ones behind Copy and Reveal. */
function Outputs({ id, run, outputs }: { id: string; run: string; outputs: unknown }) {
  const entries = Object.entries((outputs ?? {}) as Record<string, unknown>);
  if (!entries.length) return <span className="muted">none</span>;
  return (
    <ul className="plain">
      {entries.map(([name, val]) => (
        <li key={name} data-output={name}>
          {name}:{" "}
          {isSecretValue(val) ? (
            <Secret
              name={name}
              reveal={() =>
                call(
                  api.POST("/v1/stacks/{id}/runs/{run}/outputs/{name}/reveal", {
                    params: { path: { id, run, name } },
                  }),
                )
              }
            />
          ) : (
            <code>{shown(val)}</code>
          )}
        </li>
      ))}
    </ul>
  );
}

function ActionHistory({ id, runs, who }: { id: string; runs: Run[]; who: (id: string | null | undefined) => string }) {
  if (!runs.length) return <p className="muted">No action has run yet.</p>;
  return (
    <RunsTable
      className="action-history"
      aria-labelledby="action-history-title"
      runs={runs}
      row={(r) => ({ "data-action-run": r.action?.name })}
      columns={[
        {
          header: "Action",
          cell: (r) => (
            <a href={href(`/stacks/${id}`, { run: r.id })}>{r.action ? `${r.action.undo ? "undo " : ""}${r.action.name}` : r.kind}</a>
          ),
        },
        { header: "By", cell: (r) => who(r.actor_id) },
        { header: "When", cell: (r) => when(r.started_at ?? r.created_at) },
        { header: "Machine", cell: (r) => machineOf(r) },
        { header: "Parameters", cell: (r) => <code>{r.action ? answers(r.action.parameters, r.action.inputs) : ""}</code> },
        {
          header: "Result",
          cell: (r) => (
            <>
              <StateBadge state={r.state} />
              {r.error && <div className="small">{r.error}</div>}
            </>
          ),
        },
        { header: "Outputs", cell: (r) => (r.action && !r.action.undo ? <Outputs id={id} run={r.id} outputs={r.action.outputs} /> : null) },
      ]}
    />
  );
}
