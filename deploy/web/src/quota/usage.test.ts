import { describe, expect, it } from "vitest";
import { quotaHints, stackCost, usageLines } from "./usage";

describe("team usage", () => {
  it("reads what is used, the limit and what is left, or no quota", () => {
    const lines = usageLines({
      machines: { used: 3, limit: 10, remaining: 7 },
      vcpus: { used: 6, limit: 4, remaining: 0 },
      memory_mib: { used: 2048, limit: null, remaining: null },
      disk_gib: { used: 0, limit: 0, remaining: 0 },
    });
    expect(lines.map((l) => l.text)).toEqual([
      "3 of 10 used, 7 left",
      "6 of 4 used, 0 left",
      "2048 MiB used (no quota)",
      "0 of 0 GiB used, 0 GiB left",
    ]);
    expect(lines[1]).toMatchObject({ dimension: "vcpus", label: "vCPUs", used: 6, limit: 4 });
  });
});

describe("a new stack's share of the quota", () => {
  const def = {
    name: "shop",
    phases: [{
      name: "p", jobs: [
        { name: "app", source: { repo: "r", branch: "main" }, machine: true,
          parameters: [{ name: "cores", type: "integer" as const, default: 2 }, { name: "memory_mb", type: "number" as const, default: 1000.5 }],
          resources: { cores: { param: "cores" }, memory_mb: { param: "memory_mb" }, disk_gb: 20 } },
        { name: "dns", source: { repo: "r", branch: "main" } },
      ],
    }],
  };
  it("counts machines and their resources from answers, defaults and constants", () => {
    const cost = stackCost(def, { app: { executions: [{ parameters: { cores: 4 } }, { parameters: {} }] }, dns: { executions: [{}] } });
    expect(cost).toEqual({ machines: 2, vcpus: 6, memory_mib: 2002, disk_gib: 40 });
  });
  it("says what it takes of what remains, the environment's narrowing first", () => {
    const free = { used: 0, limit: null, remaining: null };
    const usage = {
      team_id: "t", machines: free, memory_mib: free, disk_gib: { used: 10, limit: 50, remaining: 40 },
      vcpus: { used: 4, limit: 24, remaining: 20 },
      environments: [{ environment_id: "e", name: "prod", machines: free, memory_mib: free, disk_gib: { used: 10, limit: null, remaining: 40 },
        vcpus: { used: 4, limit: 8, remaining: 4 } }],
    };
    const cost = { machines: 2, vcpus: 6, memory_mib: 2002, disk_gib: 40 };
    expect(quotaHints(cost, usage, "other")).toEqual([
      { dimension: "vcpus", text: "This stack uses 6 of 20 remaining vCPUs", over: false },
      { dimension: "disk_gib", text: "This stack uses 40 of 40 remaining GiB of disk", over: false },
    ]);
    expect(quotaHints(cost, usage, "e")[0]).toEqual({ dimension: "vcpus", text: "This stack uses 6 of 4 remaining vCPUs", over: true });
  });
});
