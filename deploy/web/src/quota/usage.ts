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
    const text = a.limit === null
      ? `${a.used}${unit} used (no quota)`
      : `${a.used} of ${a.limit}${unit} used, ${a.remaining ?? 0}${unit} left`;
    return { dimension: dim, label, used: a.used, limit: a.limit, text };
  });
}
