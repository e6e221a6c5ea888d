// What the ISO screens compute, free of React: an ISO run's stages as the pipeline the stacks'
// PipelineView draws (one column per stage, one card per clone of the clones stage), and where
// in its cluster a built ISO may be used.
import type { Card, Pipeline, Schemas } from "../api/client";

export type ISO = Schemas["ISO"];
export type ISODetail = Schemas["ISODetail"];
/** An ISO run with its stages and summary (the generated type of its null stack_id varies). */
export type ISORun = Omit<Schemas["ISORunDetail"], "stack_id">;

/** isoPipeline lays an ISO run's stages out as a pipeline: the stages in run order, a column each. */
export function isoPipeline(run: ISORun): Pipeline {
  const columns: Pipeline["columns"] = [];
  for (const s of run.stages) {
    let col = columns.find((c) => c.name === s.stage);
    if (!col) {
      col = { phase: columns.length, name: s.stage, cards: [] };
      columns.push(col);
    }
    const card: Card = {
      step_id: s.id,
      job: s.stage,
      execution: s.clone,
      kind: "apply",
      state: s.state,
      attempt: s.attempt,
      node: null,
      started_at: s.started_at,
      finished_at: s.finished_at,
      gate_wait_ms: 0,
      work_ms: 0,
      error: s.error,
      reason: s.reason,
      waiting_on: null,
      allowed_actions: [],
    };
    col.cards.push(card);
  }
  const { stages: _s, summary: _m, ...rest } = run;
  return { run: rest as unknown as Pipeline["run"], columns };
}

/** availability says which machines of the ISO's cluster may use it, in words. */
export function availability(iso: Pick<ISO, "state" | "artifact">, copies: { node: string }[] = []): string {
  const a = iso.artifact;
  if (!a || iso.state !== "built") return "not available (not built)";
  if (a.shared) return `every node of the cluster (shared storage ${a.storage})`;
  const nodes = [a.node, ...copies.map((c) => c.node).filter((n) => n !== a.node)];
  return `node${nodes.length > 1 ? "s" : ""} ${nodes.join(", ")} only (storage ${a.storage} is not shared)`;
}

/** summaryText is a run's summary in one line: what was done, skipped, failed and not run. */
export function summaryText(s: ISORun["summary"]): string {
  const parts: string[] = [];
  if (s.done.length) parts.push(`done: ${s.done.join(", ")}`);
  if (s.skipped.length) parts.push(`skipped: ${s.skipped.join(", ")}`);
  if (s.failed.length) parts.push(`failed: ${s.failed.join(", ")}`);
  if (s.not_run.length) parts.push(`not run: ${s.not_run.join(", ")}`);
  return parts.join(" · ") || "nothing ran";
}
