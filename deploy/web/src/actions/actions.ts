// The actions screens' model, free of React for unit tests: what an action's form starts with
// (its parameters' defaults, its inputs' prefills, the machine preselected), what a run request
// sends (only the inputs typed over their prefills), why actions cannot run now, and the
// instances list with the undone ones the history tells of. The server stays the validator.
import type { Schemas, Stack } from "../api/client";
import { parameterDefaults, parameterValues, type Scalar } from "../form/model";
import { busyReason } from "../plan/plan";
import { machineLabel } from "../numbering";

export type StackAction = Schemas["StackAction"];
export type ActionInput = StackAction["inputs"][number];
export type ActionInstance = Schemas["ActionInstance"];
export type Run = Schemas["Run"];

/** The run_action entry of a stack's allowed_actions. */
export const RUN_ACTION = "run_action";

/** prefillSource says where an input's prefill comes from, as the form shows it. */
export function prefillSource(i: ActionInput): string {
  if (i.secret) return `from ${i.from} (secret)`;
  if (i.problem) return `from ${i.from}: ${i.problem}`;
  return `from ${i.from}`;
}

/** inputText is an input's prefill as its text field holds it ("" for a secret or none). */
export function inputText(i: ActionInput): string {
  if (i.secret || i.value === null || i.value === undefined) return "";
  return typeof i.value === "string" ? i.value : JSON.stringify(i.value);
}

/** inputPlaceholder is what an empty input field says: what the worker resolves it from. */
export function inputPlaceholder(i: ActionInput): string {
  return i.secret ? `${prefillSource(i)}, resolved when it runs` : "";
}

/**
 * changedInputs is the `inputs` of a run request: only those typed over their prefill (a
 * secret one: any value typed). A prefill that was not a string is read back as JSON when it
 * parses, else sent as typed (the server names the field).
 */
export function changedInputs(inputs: ActionInput[], typed: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const i of inputs) {
    const t = typed[i.name];
    if (t === undefined) continue;
    if (i.secret) {
      if (t !== "") out[i.name] = t;
      continue;
    }
    if (t === inputText(i)) continue;
    if (i.value !== null && typeof i.value !== "string") {
      try {
        out[i.name] = JSON.parse(t);
        continue;
      } catch {
        // sent as typed
      }
    }
    out[i.name] = t;
  }
  return out;
}

export interface Machine {
  index: number;
  label: string;
  /** Only a built machine may be picked. */
  built: boolean;
}

/**
 * machineChoices is the machines of a script action's job: those the API lists as built may be
 * picked, the others are shown and cannot be.
 */
export function machineChoices(a: StackAction, s: Pick<Stack, "jobs">): Machine[] {
  if (a.kind !== "script" || !a.job) return [];
  const built = new Map(a.executions.map((m) => [m.index, m.name]));
  const seen = new Set<number>();
  const out: Machine[] = [];
  for (const e of s.jobs[a.job]?.executions ?? []) {
    if (e.state === "removed") continue;
    seen.add(e.index);
    const name = built.get(e.index);
    out.push({
      index: e.index,
      label: `${machineLabel(a.job, e.index)}${name ? ` (${name})` : " (not built)"}`,
      built: name !== undefined,
    });
  }
  for (const m of a.executions)
    if (!seen.has(m.index)) out.push({ index: m.index, label: `${machineLabel(a.job, m.index)} (${m.name})`, built: true });
  return out.sort((x, y) => x.index - y.index);
}

/** preselectedMachine is the machine a script action's form starts on: the API's, or the only built one. */
export function preselectedMachine(a: StackAction): number | null {
  if (a.kind !== "script") return null;
  if (a.execution !== null && a.execution !== undefined) return a.execution;
  return a.executions.length === 1 ? a.executions[0].index : null;
}

export interface ActionValues {
  parameters: Record<string, Scalar | "">;
  inputs: Record<string, string>;
  execution: number | null;
}

/** initialActionValues is what an action's form starts with. */
export function initialActionValues(a: StackAction): ActionValues {
  return {
    parameters: parameterDefaults(a),
    inputs: Object.fromEntries(a.inputs.map((i) => [i.name, inputText(i)])),
    execution: preselectedMachine(a),
  };
}

/** actionRequest is the body of POST /v1/stacks/{id}/actions/{name}. */
export function actionRequest(a: StackAction, v: ActionValues): Schemas["ActionRequest"] {
  const body: Schemas["ActionRequest"] = {
    parameters: parameterValues(a, v.parameters) as unknown as Schemas["ActionRequest"]["parameters"],
    inputs: changedInputs(a.inputs, v.inputs) as unknown as Schemas["ActionRequest"]["inputs"],
  };
  if (a.kind === "script") body.execution = v.execution;
  return body;
}

/** actionsBlocked says why the stack's actions cannot run now, or "" when they can. */
export function actionsBlocked(
  s: Pick<Stack, "state" | "current_run" | "allowed_actions" | "deployed_at">,
  role: string | undefined,
): string {
  if (s.allowed_actions.includes(RUN_ACTION)) return "";
  if (role === "viewer") return "Viewers cannot run actions.";
  if (s.state === "draft") return "A draft has nothing to act on: deploy it first.";
  if (s.state === "removed") return "The stack is removed.";
  const busy = busyReason(s);
  if (busy) return busy.replace(/editing is possible/, "actions are possible");
  if (s.state === "failed" && !s.deployed_at) return "The stack never deployed: its machines do not exist.";
  return `Actions cannot run on a ${s.state} stack.`;
}

/** undoBlocked says why an instance cannot be undone now, or "" when it can. */
export function undoBlocked(i: Pick<ActionInstance, "state" | "allowed_actions">, stackReason: string): string {
  if (i.allowed_actions.includes("undo")) return "";
  if (i.state === "undoing") return "It is being undone.";
  if (i.state === "applying") return "It is being applied.";
  return stackReason || "It cannot be undone now.";
}

/** isSecretValue: a secret value as the API shows it, {"secret": true}. */
export function isSecretValue(v: unknown): boolean {
  return !!v && typeof v === "object" && (v as { secret?: unknown }).secret === true;
}

/** shown is a (non-secret) value as a table cell shows it. */
export function shown(v: unknown): string {
  if (isSecretValue(v)) return "••••••••";
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** answers is "name=value" for each answer of a run or instance, secrets masked. */
export function answers(...objs: unknown[]): string {
  const parts: string[] = [];
  for (const o of objs)
    if (o && typeof o === "object") for (const [k, v] of Object.entries(o as Record<string, unknown>)) parts.push(`${k}=${shown(v)}`);
  return parts.join(", ");
}

export interface InstanceRow {
  id: string;
  /** The stack's numbering of its instances (1, 2, …), null when unknown. */
  number: number | null;
  action: string;
  state: ActionInstance["state"] | "undone";
  parameters: unknown;
  inputs: unknown;
  outputs: unknown;
  createdBy: string | null;
  createdAt: string;
  /** The run that made it (its outputs are revealed through it). */
  runId: string;
  /** When and by whom it was undone. */
  undoneAt?: string | null;
  undoneBy?: string | null;
  instance?: ActionInstance;
}

/**
 * instanceRows is the instances the API lists (not undone) and, from the action runs, the ones
 * an undo run removed, newest first. An undone instance is numbered by the order the runs made
 * instances in, as the API numbers them, when every such run is known (complete), else not.
 */
export function instanceRows(instances: ActionInstance[], runs: Run[], complete: boolean): InstanceRow[] {
  const rows: InstanceRow[] = instances.map((i) => ({
    id: i.id,
    number: i.number,
    action: i.action,
    state: i.state,
    parameters: i.parameters,
    inputs: i.inputs,
    outputs: i.outputs,
    createdBy: i.created_by,
    createdAt: i.created_at,
    runId: i.run_id,
    instance: i,
  }));
  const listed = new Set(instances.map((i) => i.id));
  const made = runs.filter((r) => r.action && !r.action.undo && r.action.instance).sort((a, b) => a.created_at.localeCompare(b.created_at));
  const numberOf = new Map(made.map((r, n) => [r.action!.instance!, n + 1]));
  for (const u of runs) {
    const iid = u.action?.instance;
    if (!u.action?.undo || u.state !== "succeeded" || !iid || listed.has(iid)) continue;
    listed.add(iid);
    const m = made.find((r) => r.action!.instance === iid);
    rows.push({
      id: iid,
      number: complete ? (numberOf.get(iid) ?? null) : null,
      action: u.action.name,
      state: "undone",
      parameters: m?.action?.parameters ?? u.action.parameters,
      inputs: m?.action?.inputs ?? u.action.inputs,
      outputs: m?.action?.outputs ?? {},
      createdBy: m?.actor_id ?? null,
      createdAt: m?.created_at ?? u.created_at,
      runId: m?.id ?? u.id,
      undoneAt: u.finished_at,
      undoneBy: u.actor_id,
    });
  }
  return rows.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
}

/** machineOf names the machine an action run ran on ("" for a terraform action). */
export function machineOf(r: Run): string {
  const a = r.action;
  if (!a || a.job === null || a.execution === null) return "";
  return machineLabel(a.job, a.execution);
}
