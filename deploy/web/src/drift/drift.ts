// What the console shows of a stack's drift (GET /v1/stacks/{id} → drift): the findings of the
// drift checks (what changed on Proxmox behind Horizon's back), when the stack was last checked,
// and what a user may do about them. Pure functions: DriftView renders them.
//
// Decisions:
// - Findings nobody accepted come first (they are what makes the stack "drifted"), then the
//   accepted ones, each group by machine and property, so a re-render never reorders a table.
// - A value is shown as Proxmox shows it; tags (a list) joined by ", "; an identity or place
//   (an object: uuid/ctime, vmid/node) as "key=value" pairs in key order; null as "absent".
// - Buttons follow the API's own rules: "Check now" for a writer on a deployed or failed stack
//   with no run in progress (the route answers 409 otherwise); "Re-apply this job" is the
//   run-again of that machine, so it needs the stack's `run_again` action; "Accept" for a
//   writer on a finding not yet accepted. Viewers see the findings and no button.
import type { Schemas, Stack } from "../api/client";
import { machineLabel } from "../numbering";

export type Drift = Schemas["Drift"];
export type DriftFinding = Schemas["DriftFinding"];
type Value = DriftFinding["expected"];

/** driftValue is how an expected or actual value reads. */
export function driftValue(v: Value): string {
  if (v === null || v === undefined) return "absent";
  if (typeof v === "string") return v === "" ? '""' : v;
  if (Array.isArray(v)) return v.length ? v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(", ") : "(none)";
  const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b));
  return entries.length ? entries.map(([k, x]) => `${k}=${typeof x === "string" ? x : JSON.stringify(x)}`).join(", ") : "(none)";
}

/** findingMachine is the machine a finding is about: "app #1". */
export function findingMachine(f: Pick<DriftFinding, "job" | "execution">): string {
  return machineLabel(f.job, f.execution);
}

/** findingProperty is the property a finding is about; "" is the machine as a whole. */
export function findingProperty(f: Pick<DriftFinding, "path">): string {
  return f.path === "" ? "the machine" : f.path;
}

/** findingChange is the change in one line: "2048 → 4096". */
export function findingChange(f: Pick<DriftFinding, "expected" | "actual">): string {
  return `${driftValue(f.expected)} → ${driftValue(f.actual)}`;
}

/** findingWho says who changed it and when, as far as the node's task log tells; "" when it does not. */
export function findingWho(f: Pick<DriftFinding, "changed_by" | "changed_at">, fmt: (iso: string) => string): string {
  if (f.changed_by && f.changed_at) return `${f.changed_by}, ${fmt(f.changed_at)}`;
  if (f.changed_by) return f.changed_by;
  if (f.changed_at) return fmt(f.changed_at);
  return "";
}

/** sortFindings puts the findings nobody accepted first, then by machine and property. */
export function sortFindings(fs: DriftFinding[]): DriftFinding[] {
  return [...fs].sort(
    (a, b) =>
      Number(!!a.accepted) - Number(!!b.accepted) ||
      a.job.localeCompare(b.job) ||
      a.execution - b.execution ||
      a.path.localeCompare(b.path),
  );
}

/** lastCheck says when the stack was last checked, or that it never was. */
export function lastCheck(d: Pick<Drift, "checked_at">, fmt: (iso: string) => string): string {
  return d.checked_at ? `Last checked ${fmt(d.checked_at)}` : "Never checked";
}

/** driftHeadline sums the findings up: what the section says before its table. */
export function driftHeadline(d: Pick<Drift, "checked_at" | "findings">): string {
  const open = d.findings.filter((f) => !f.accepted).length;
  const accepted = d.findings.length - open;
  if (!d.checked_at && d.findings.length === 0) return "";
  const parts = [open === 0 ? "No drift" : `${open} change${open === 1 ? "" : "s"} made outside Horizon`];
  if (accepted) parts.push(`${accepted} accepted`);
  return parts.join(" · ");
}

export type DriftButtons = { check: boolean; reapply: boolean; accept: boolean };

/** driftButtons says which drift buttons the user gets on this stack (see the package note). */
export function driftButtons(s: Pick<Stack, "state" | "current_run" | "allowed_actions">, role: string | undefined): DriftButtons {
  const writer = !!role && role !== "viewer";
  const idle = !s.current_run && (s.state === "deployed" || s.state === "failed");
  return { check: writer && idle, reapply: writer && s.allowed_actions.includes("run_again"), accept: writer };
}

/** ifMatch is the If-Match header naming a finding's version. */
export function ifMatch(f: Pick<DriftFinding, "version">): string {
  return `"${f.version}"`;
}

export type CheckMark = Pick<Drift, "checked_at" | "failed_at">;

/** checkDone says whether a check asked for at `sent` has reported: the stack's last check
 * (or its last failure) moved on since. */
export function checkDone(sent: CheckMark, d: CheckMark): boolean {
  return d.checked_at !== sent.checked_at || d.failed_at !== sent.failed_at;
}
