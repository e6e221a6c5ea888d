// The pipeline's layout, free of React: one column per phase in phase order, one card per
// execution in execution order; a job with more than GROUP_ABOVE executions in a column becomes
// one group card with counts per state, so a 40-machine job stays readable.
//
// A column's number is the phase's number in the stack's template (1…n), found from its jobs:
// a run's own phase positions are an ordering (an edit removes, builds and removes-after-
// replacing in three slots per template phase; a removal runs them backwards after undoing
// actions) and never shown. A column of no template phase (undoing an action, publishing to
// Nagios, destroying a job the template no longer has) has no number.
import type { Card, Pipeline } from "../api/client";

export const GROUP_ABOVE = 6;

export type Item =
  | { kind: "card"; key: string; card: Card }
  | { kind: "group"; key: string; job: string; cards: Card[]; counts: [string, number][]; state: string };

export interface Column {
  phase: number;
  /** number is the template phase's number, 1…n; null for a column of no template phase. */
  number: number | null;
  name: string;
  items: Item[];
  state: string;
}

// The order a group's (and a column's) summary state is picked in: the most urgent first.
const urgency = ["failed", "running", "queued", "held", "pending", "canceled", "skipped", "succeeded"];

export function summaryState(states: string[]): string {
  if (!states.length) return "pending";
  if (states.every((s) => s === "succeeded" || s === "skipped")) return states.includes("succeeded") ? "succeeded" : "skipped";
  for (const u of urgency) if (states.includes(u)) return u;
  return states[0];
}

/** TemplatePhase is what layout needs of a template's phase: its jobs' names. */
export interface TemplatePhase {
  jobs: { name: string }[];
}

/**
 * layout lays a run out. phases are the stack's template's, which number the columns; without
 * them (an ISO's stages) a column is numbered by its place in the run.
 */
export function layout(p: Pipeline, phases?: TemplatePhase[]): Column[] {
  const phaseOf = new Map<string, number>();
  phases?.forEach((ph, i) => {
    for (const j of ph.jobs) phaseOf.set(j.name, i + 1);
  });
  return [...p.columns]
    .sort((a, b) => a.phase - b.phase)
    .map((col) => {
      const byJob = new Map<string, Card[]>();
      for (const c of col.cards) byJob.set(c.job, [...(byJob.get(c.job) ?? []), c]);
      const items: Item[] = [];
      for (const [job, cards] of byJob) {
        const sorted = [...cards].sort((a, b) => (a.execution ?? -1) - (b.execution ?? -1) || a.kind.localeCompare(b.kind));
        if (sorted.length > GROUP_ABOVE) {
          const counts = new Map<string, number>();
          for (const c of sorted) counts.set(c.state, (counts.get(c.state) ?? 0) + 1);
          items.push({
            kind: "group",
            key: `${job}*`,
            job,
            cards: sorted,
            counts: urgency.filter((s) => counts.has(s)).map((s) => [s, counts.get(s)!] as [string, number]),
            state: summaryState(sorted.map((c) => c.state)),
          });
        } else for (const card of sorted) items.push({ kind: "card", key: card.step_id, card });
      }
      const template = col.cards
        .filter((c) => !c.kind.startsWith("action_") && !c.kind.startsWith("nagios_"))
        .map((c) => phaseOf.get(c.job));
      const number = phases ? (template.find((n) => n !== undefined) ?? null) : col.phase + 1;
      return { phase: col.phase, number, name: col.name, items, state: summaryState(col.cards.map((c) => c.state)) };
    });
}

/** duration is how long a card ran (or has run so far), as "1m 05s". */
export function duration(startedAt: string | null, finishedAt: string | null, now = Date.now()): string {
  if (!startedAt) return "";
  const ms = (finishedAt ? Date.parse(finishedAt) : now) - Date.parse(startedAt);
  if (!(ms >= 0)) return "";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

/** waitingText is what a queued card waits on, in words. */
export function waitingText(c: Card): string {
  const w = c.waiting_on;
  if (!w) return "";
  const pos = w.position === 1 ? "next in line" : `number ${w.position} in line`;
  return `waits for node ${w.node}'s build slot (${pos}${w.holder?.stack ? ", held by another build" : ""})`;
}
