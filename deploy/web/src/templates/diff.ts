// The change list between two versions of a template, computed from their definitions: phases,
// jobs (added, removed, moved, and per job what changed: source, parameters, inputs, outputs,
// scripts, the rest) and actions. The API's /changes says whether the template moved since a
// version (a new definition or a branch that moved); this says what, in words.
import type { Schemas } from "../api/client";

type Definition = Schemas["Definition"];
type Job = Schemas["DefinitionJob"];
type Named = { name: string };

export interface Change {
  /** What it is about: "job app", "action rotate-api-key", "phase database". */
  subject: string;
  kind: "added" | "removed" | "changed";
  /** What changed, for a "changed" one. */
  details: string[];
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

function byName<T extends Named>(xs: T[] | undefined): Map<string, T> {
  return new Map((xs ?? []).map((x) => [x.name, x]));
}

/** listDiff names the members of two named lists that were added, removed or changed. */
function listDiff<T extends Named>(what: string, a: T[] | undefined, b: T[] | undefined): string[] {
  const out: string[] = [];
  const A = byName(a),
    B = byName(b);
  for (const [n, x] of B) {
    if (!A.has(n)) out.push(`${what} ${n} added`);
    else if (!same(A.get(n), x)) out.push(`${what} ${n} changed`);
  }
  for (const n of A.keys()) if (!B.has(n)) out.push(`${what} ${n} removed`);
  return out;
}

function jobDetails(a: Job, b: Job, phaseA: string, phaseB: string): string[] {
  const d: string[] = [];
  if (phaseA !== phaseB) d.push(`moved from phase ${phaseA} to ${phaseB}`);
  if (!same(a.source, b.source)) {
    for (const k of ["repo", "branch", "path"] as const)
      if (a.source[k] !== b.source[k]) d.push(`source ${k}: ${a.source[k] ?? ""} → ${b.source[k] ?? ""}`);
    if (d.length === 0 || !d.some((x) => x.startsWith("source"))) d.push("source changed");
  }
  d.push(...listDiff("parameter", a.parameters, b.parameters));
  const ia = a.inputs ?? {},
    ib = b.inputs ?? {};
  for (const k of Object.keys(ib))
    if (!(k in ia)) d.push(`input ${k} added`);
    else if (ia[k] !== ib[k]) d.push(`input ${k}: ${ia[k]} → ${ib[k]}`);
  for (const k of Object.keys(ia)) if (!(k in ib)) d.push(`input ${k} removed`);
  d.push(...listDiff("output", a.outputs, b.outputs));
  d.push(...listDiff("script", a.scripts, b.scripts));
  d.push(...listDiff("cleanup script", a.cleanup, b.cleanup));
  const known = new Set(["name", "source", "parameters", "inputs", "outputs", "scripts", "cleanup"]);
  const rest = new Set([...Object.keys(a), ...Object.keys(b)].filter((k) => !known.has(k)));
  for (const k of rest) if (!same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) d.push(`${k} changed`);
  return d;
}

/** definitionChanges lists what changes from definition a to definition b. */
export function definitionChanges(a: Definition, b: Definition): Change[] {
  const out: Change[] = [];
  const phasesA = a.phases.map((p) => p.name),
    phasesB = b.phases.map((p) => p.name);
  for (const p of phasesB) if (!phasesA.includes(p)) out.push({ subject: `phase ${p}`, kind: "added", details: [] });
  for (const p of phasesA) if (!phasesB.includes(p)) out.push({ subject: `phase ${p}`, kind: "removed", details: [] });
  const jobsA = new Map(a.phases.flatMap((p) => p.jobs.map((j) => [j.name, { j, phase: p.name }] as const)));
  const jobsB = new Map(b.phases.flatMap((p) => p.jobs.map((j) => [j.name, { j, phase: p.name }] as const)));
  for (const [n, { j, phase }] of jobsB) {
    const old = jobsA.get(n);
    if (!old) out.push({ subject: `job ${n}`, kind: "added", details: [] });
    else {
      const d = jobDetails(old.j, j, old.phase, phase);
      if (d.length) out.push({ subject: `job ${n}`, kind: "changed", details: d });
    }
  }
  for (const n of jobsA.keys()) if (!jobsB.has(n)) out.push({ subject: `job ${n}`, kind: "removed", details: [] });
  const actA = byName(a.actions),
    actB = byName(b.actions);
  for (const [n, x] of actB) {
    const old = actA.get(n);
    if (!old) out.push({ subject: `action ${n}`, kind: "added", details: [] });
    else if (!same(old, x)) {
      const d = listDiff("parameter", old.parameters, x.parameters);
      for (const k of new Set([...Object.keys(old), ...Object.keys(x)]))
        if (k !== "parameters" && !same((old as Record<string, unknown>)[k], (x as Record<string, unknown>)[k])) d.push(`${k} changed`);
      out.push({ subject: `action ${n}`, kind: "changed", details: d });
    }
  }
  for (const n of actA.keys()) if (!actB.has(n)) out.push({ subject: `action ${n}`, kind: "removed", details: [] });
  if (a.description !== b.description) out.push({ subject: "description", kind: "changed", details: [] });
  return out;
}

/**
 * compareWith is the version a version v is compared with: asked (?from=) when it is another
 * version of the template, else the one before v, else (v1) the oldest other; 0 when v is the
 * only version.
 */
export function compareWith(versions: number[], v: number, asked: number): number {
  const others = versions.filter((n) => n !== v).sort((a, b) => a - b);
  if (others.includes(asked)) return asked;
  if (others.includes(v - 1)) return v - 1;
  return others[0] ?? 0;
}
