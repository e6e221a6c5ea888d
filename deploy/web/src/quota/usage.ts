// What a team uses of its quotas, as lines a screen draws as bars: one per dimension, with
// what remains; a dimension without a limit reads as "no quota".
import type { Schemas } from "../api/client";

export type UsageLine = { dimension: string; label: string; used: number; limit: number | null; text: string };

const DIMENSIONS = [
  ["machines", "Machines", ""],
  ["vcpus", "vCPUs", ""],
  ["memory_mib", "Memory", " MiB"],
  ["disk_gib", "Disk", " GiB"],
] as const;

export function usageLines(u: Pick<Schemas["TeamUsage"], "machines" | "vcpus" | "memory_mib" | "disk_gib">): UsageLine[] {
  return DIMENSIONS.map(([dim, label, unit]) => {
    const a = u[dim];
    const text =
      a.limit === null ? `${a.used}${unit} used (no quota)` : `${a.used} of ${a.limit}${unit} used, ${a.remaining ?? 0}${unit} left`;
    return { dimension: dim, label, used: a.used, limit: a.limit, text };
  });
}

type Cost = { machines: number; vcpus: number; memory_mib: number; disk_gib: number };
type JobAnswers = Record<string, { executions: { parameters?: Record<string, unknown> | null }[] }>;

const READS = [
  ["cores", "vcpus"],
  ["memory_mb", "memory_mib"],
  ["disk_gb", "disk_gib"],
] as const;

// stackCost is what a stack of these answers uses, as the server counts it: one machine per
// execution of a machine job, plus its declared resources (a constant, or the answer to a
// parameter, else its default), numbers rounded up, negatives 0.
export function stackCost(def: Schemas["Definition"], jobs: JobAnswers): Cost {
  const c: Cost = { machines: 0, vcpus: 0, memory_mib: 0, disk_gib: 0 };
  for (const phase of def.phases)
    for (const job of phase.jobs) {
      if (!job.machine) continue;
      for (const e of jobs[job.name]?.executions ?? []) {
        c.machines++;
        for (const [key, dim] of READS) {
          const a = job.resources?.[key];
          if (a === undefined) continue;
          let v: unknown = a;
          if (typeof a === "object") {
            v = e.parameters?.[a.param];
            if (typeof v !== "number") v = job.parameters?.find((p) => p.name === a.param)?.default;
          }
          if (typeof v === "number" && v > 0) c[dim] += Math.ceil(v);
        }
      }
    }
  return c;
}

// quotaHints says, for each dimension the team (or its quota in the environment) limits, how
// much of what remains a new stack of this cost takes: "This stack uses 6 of 20 remaining
// vCPUs"; over is true when it does not fit.
export function quotaHints(
  cost: Cost,
  usage: Schemas["TeamUsage"],
  environment: string,
): { dimension: string; text: string; over: boolean }[] {
  const env = usage.environments.find((e) => e.environment_id === environment);
  return DIMENSIONS.flatMap(([dim, label, unit]) => {
    const remaining = (env ?? usage)[dim].remaining ?? usage[dim].remaining;
    if (remaining === null) return [];
    const name = dim === "memory_mib" || dim === "disk_gib" ? `${unit.trim()} of ${label.toLowerCase()}` : label;
    return [{ dimension: dim, text: `This stack uses ${cost[dim]} of ${remaining} remaining ${name}`, over: cost[dim] > remaining }];
  });
}

export type DeltaLine = { dimension: string; text: string; over: boolean };

// deltaLines says what saving an edit changes in the team's usage (the plan's resources), one
// line per dimension that changes: "+2 vCPUs, 4 of 20 remaining". What remains is the tighter
// of the team's quota and its environment's narrowing, as it is before the save (the stack's
// current usage is already counted in it); over is true when the growth does not fit. A
// dimension without a limit reads its change alone; what an edit frees is freed once the
// destroys end, as the server counts it.
export function deltaLines(delta: Cost, usage: Schemas["TeamUsage"] | undefined, environment: string): DeltaLine[] {
  const env = usage?.environments.find((e) => e.environment_id === environment);
  return DIMENSIONS.flatMap(([dim, label, unit]) => {
    const d = delta[dim];
    if (d === 0) return [];
    const amount =
      dim === "machines"
        ? `${Math.abs(d)} machine${Math.abs(d) === 1 ? "" : "s"}`
        : dim === "vcpus"
          ? `${Math.abs(d)} vCPU${Math.abs(d) === 1 ? "" : "s"}`
          : `${Math.abs(d)}${unit} of ${label.toLowerCase()}`;
    const sign = d > 0 ? "+" : "−";
    if (d < 0) return [{ dimension: dim, text: `${sign}${amount}, freed once the destroys end`, over: false }];
    // The scopes that limit this dimension, the tighter one shown.
    const scopes: { remaining: number; limit: number; where: string }[] = [];
    const team = usage?.[dim];
    if (team && team.limit !== null) scopes.push({ remaining: Math.max(0, team.limit - team.used), limit: team.limit, where: "" });
    const narrow = env?.[dim];
    if (env && narrow && narrow.limit !== null)
      scopes.push({ remaining: Math.max(0, narrow.limit - narrow.used), limit: narrow.limit, where: ` in ${env.name}` });
    if (scopes.length === 0) return [{ dimension: dim, text: `${sign}${amount}`, over: false }];
    const s = scopes.reduce((a, b) => (b.remaining < a.remaining ? b : a));
    return [{ dimension: dim, text: `${sign}${amount}, ${s.remaining} of ${s.limit}${unit} remaining${s.where}`, over: d > s.remaining }];
  });
}
