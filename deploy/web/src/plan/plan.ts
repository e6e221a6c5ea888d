// What an edit of a deployed stack will do, in words: the plan (POST /v1/stacks/{id}/plan) as
// counts and causes, what the save button does with it, and the confirmation rules of the
// destructive actions (a save that destroys machines, remove, force-remove). Kept free of React
// so that unit tests drive it.
import type { Schemas, Stack } from "../api/client";
import { machineLabel } from "../numbering";

export type Plan = Schemas["Plan"];
export type PlanEntry = Plan["order"][number];
export type PlanReason = NonNullable<PlanEntry["because"]>[number];
export type Manifest = Schemas["AbandonManifest"];

export const actionLabel: Record<PlanEntry["action"], string> = {
  create: "create",
  reapply: "re-apply",
  destroy: "destroy",
  dependent: "runs again",
};

/** counts is the plan's summary: how many executions each action touches, nonzero ones only. */
export function counts(p: Plan): { action: PlanEntry["action"]; n: number; text: string }[] {
  const out: { action: PlanEntry["action"]; n: number; text: string }[] = [];
  const add = (action: PlanEntry["action"], n: number, text: string) => n > 0 && out.push({ action, n, text });
  add("create", p.create.length, `${p.create.length} to create`);
  add("reapply", p.reapply.length, `${p.reapply.length} to re-apply`);
  add("dependent", p.dependents.length, `${p.dependents.length} ${p.dependents.length === 1 ? "dependent runs" : "dependents run"} again`);
  add("destroy", p.destroy.length, `${p.destroy.length} to destroy`);
  return out;
}

/** Names turns the ids a plan names (addresses, keys, servers, ISOs) into what the user knows. */
export type Names = (field: string, id: string) => string | undefined;

const attachmentNames: Record<string, string> = {
  address_id: "address",
  ssh_key_id: "SSH key",
  proxmox_server_id: "Proxmox server",
  node: "node",
  pool: "pool",
  iso_id: "ISO",
  node_exporter: "node exporter",
  startup_order: "startup order",
  nagios_hostgroup: "Nagios host group",
};

function show(field: string, v: unknown, names?: Names): string {
  if (v === undefined || v === null || v === "") return "none";
  if (typeof v === "string") return names?.(field, v) ?? v;
  return JSON.stringify(v);
}

/** reasonText is one cause of a change, in words. */
export function reasonText(r: PlanReason, names?: Names): string {
  switch (r.kind) {
    case "param":
      return r.secret ? `${r.param} (secret) changed` : `${r.param}: ${show("", r.from)} → ${show("", r.to)}`;
    case "attachment": {
      const f = r.param ?? "";
      return `${attachmentNames[f] ?? f}: ${show(f, r.from, names)} → ${show(f, r.to, names)}`;
    }
    case "input":
      return `input ${r.input} from ${r.from_job} changes`;
    case "commit":
      return "a new commit of its job";
    case "template_upgrade":
      return "template upgrade";
    case "removed_from_template":
      return "its job is not in the new template version";
    case "removed":
      return "removed in this edit";
    case "added":
      return "added in this edit";
    case "unfinished":
      return "did not finish in the last run";
  }
  return r.kind;
}

/** entryName is how an entry's execution is called on the pipeline's cards: "app #2". */
export function entryName(e: PlanEntry): string {
  return machineLabel(e.job, e.execution);
}

/**
 * replacements finds the jobs an edit both adds to and removes from, and says in which order
 * the plan does it: a replace is a removal and an addition in one save.
 */
export function replacements(p: Plan): { job: string; order: "add-first" | "remove-first" }[] {
  const out: { job: string; order: "add-first" | "remove-first" }[] = [];
  const jobs = new Set(p.create.map((e) => e.job).filter((j) => p.destroy.some((d) => d.job === j)));
  for (const job of jobs) {
    const firstCreate = p.order.findIndex((e) => e.job === job && e.action === "create");
    const firstDestroy = p.order.findIndex((e) => e.job === job && e.action === "destroy");
    out.push({ job, order: firstCreate < firstDestroy ? "add-first" : "remove-first" });
  }
  return out;
}

/** SaveKind is what the save button does: nothing, a plain save (200), or a re-apply run (202). */
export type SaveKind = "nothing" | "save" | "reapply";

export function saveKind(p: Plan | undefined, plainChanged: boolean): SaveKind {
  if (p?.run_needed) return "reapply";
  return plainChanged ? "save" : "nothing";
}

export function saveLabel(k: SaveKind): string {
  return k === "reapply" ? "Save and re-apply" : k === "save" ? "Save" : "No changes to save";
}

/**
 * needsTypedName is the rule of the edit's confirmation: the stack's name must be typed iff the
 * plan destroys or replaces a machine (a replace is a destroy and a create in one save, so it is
 * in p.destroy too). Nothing else asks for it: not freeing or attaching addresses, re-applying,
 * creating, nor a plain save — whatever else the same save does.
 */
export function needsTypedName(p: Plan | undefined): boolean {
  return !!p && p.destroy.length > 0;
}

/** typedNameMatches is whether what was typed confirms a destructive action on name. */
export function typedNameMatches(typed: string, name: string): boolean {
  return typed.trim() === name && name !== "";
}

/** busyReason says why a stack cannot be edited now, or "" when it can. */
export function busyReason(s: Pick<Stack, "state" | "current_run">): string {
  if (s.current_run)
    return `A ${s.current_run.kind.replace("_", " ")} run is ${s.current_run.state}: editing is possible again when it ends.`;
  if (s.state === "deploying" || s.state === "updating" || s.state === "removing")
    return `The stack is ${s.state}: editing is possible again when it ends.`;
  return "";
}

/** removeSteps lists what removing a stack does, in order. */
export function removeSteps(
  s: Pick<Stack, "state" | "jobs" | "deployed_at">,
  cleanupJobs: string[],
  phases: string[],
  instances = 0,
): string[] {
  if (s.state === "draft") return ["The draft is deleted at once; nothing was ever built."];
  const machines = Object.values(s.jobs).reduce((n, j) => n + j.executions.filter((e) => e.state !== "removed").length, 0);
  const steps: string[] = [];
  if (instances) steps.push(`Its ${instances} action instance${instances === 1 ? " is" : "s are"} undone, newest first.`);
  if (cleanupJobs.length) steps.push(`The cleanup scripts of ${cleanupJobs.join(", ")} run on their machines.`);
  steps.push(
    `Its ${machines} execution${machines === 1 ? " is" : "s are"} destroyed in reverse phase order${phases.length ? ` (${[...phases].reverse().join(", then ")})` : ""}.`,
  );
  steps.push("Their addresses are freed for other stacks.");
  steps.push("Its Terraform state and logs are deleted; the stack is marked removed.");
  return steps;
}

/** manifestSummary counts what a force-remove leaves behind. */
export function manifestSummary(m: Manifest): string {
  const n = (k: number, one: string, many: string) => `${k} ${k === 1 ? one : many}`;
  return [
    n(m.vms.length, "VM", "VMs"),
    n(m.addresses.length, "address", "addresses"),
    n(m.workspaces.length, "Terraform workspace", "Terraform workspaces"),
    n(m.nagios_hosts.length, "Nagios host", "Nagios hosts"),
    n(m.action_instances.length, "action instance", "action instances"),
  ].join(", ");
}
