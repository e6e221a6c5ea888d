import { describe, expect, it } from "vitest";
import { deltaLines, quotaHints, stackCost, usageLines } from "./usage";

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
    phases: [
      {
        name: "p",
        jobs: [
          {
            name: "app",
            source: { repo: "r", branch: "main" },
            machine: true,
            parameters: [
              { name: "cores", type: "integer" as const, default: 2 },
              { name: "memory_mb", type: "number" as const, default: 1000.5 },
            ],
            resources: { cores: { param: "cores" }, memory_mb: { param: "memory_mb" }, disk_gb: 20 },
          },
          { name: "dns", source: { repo: "r", branch: "main" } },
        ],
      },
    ],
  };
  it("counts machines and their resources from answers, defaults and constants", () => {
    const cost = stackCost(def, { app: { executions: [{ parameters: { cores: 4 } }, { parameters: {} }] }, dns: { executions: [{}] } });
    expect(cost).toEqual({ machines: 2, vcpus: 6, memory_mib: 2002, disk_gib: 40 });
  });
  it("says what it takes of what remains, the environment's narrowing first", () => {
    const free = { used: 0, limit: null, remaining: null };
    const usage = {
      team_id: "t",
      machines: free,
      memory_mib: free,
      disk_gib: { used: 10, limit: 50, remaining: 40 },
      vcpus: { used: 4, limit: 24, remaining: 20 },
      environments: [
        {
          environment_id: "e",
          name: "prod",
          machines: free,
          memory_mib: free,
          disk_gib: { used: 10, limit: null, remaining: 40 },
          vcpus: { used: 4, limit: 8, remaining: 4 },
        },
      ],
    };
    const cost = { machines: 2, vcpus: 6, memory_mib: 2002, disk_gib: 40 };
    expect(quotaHints(cost, usage, "other")).toEqual([
      { dimension: "vcpus", text: "This stack uses 6 of 20 remaining vCPUs", over: false },
      { dimension: "disk_gib", text: "This stack uses 40 of 40 remaining GiB of disk", over: false },
    ]);
    expect(quotaHints(cost, usage, "e")[0]).toEqual({ dimension: "vcpus", text: "This stack uses 6 of 4 remaining vCPUs", over: true });
  });
});

describe("an edit's change of usage, in the plan", () => {
  const free = { used: 0, limit: null, remaining: null };
  const usage = {
    team_id: "t",
    machines: { used: 3, limit: 10, remaining: 7 },
    memory_mib: free,
    disk_gib: { used: 45, limit: 50, remaining: 5 },
    vcpus: { used: 16, limit: 20, remaining: 4 },
    environments: [
      {
        environment_id: "e",
        name: "prod",
        machines: { used: 3, limit: 4, remaining: 1 },
        memory_mib: free,
        disk_gib: free,
        vcpus: { used: 16, limit: null, remaining: 4 },
      },
    ],
  };
  it("says what grows, what remains of the tighter quota and whether it fits", () => {
    expect(deltaLines({ machines: 2, vcpus: 2, memory_mib: 2048, disk_gib: 0 }, usage, "e")).toEqual([
      { dimension: "machines", text: "+2 machines, 1 of 4 remaining in prod", over: true },
      { dimension: "vcpus", text: "+2 vCPUs, 4 of 20 remaining", over: false },
      { dimension: "memory_mib", text: "+2048 MiB of memory", over: false },
    ]);
    expect(deltaLines({ machines: 1, vcpus: 0, memory_mib: 0, disk_gib: 20 }, usage, "other")).toEqual([
      { dimension: "machines", text: "+1 machine, 7 of 10 remaining", over: false },
      { dimension: "disk_gib", text: "+20 GiB of disk, 5 of 50 GiB remaining", over: true },
    ]);
  });
  it("says what an edit frees, and nothing when nothing changes", () => {
    expect(deltaLines({ machines: -1, vcpus: -1, memory_mib: 0, disk_gib: 0 }, usage, "e")).toEqual([
      { dimension: "machines", text: "−1 machine, freed once the destroys end", over: false },
      { dimension: "vcpus", text: "−1 vCPU, freed once the destroys end", over: false },
    ]);
    expect(deltaLines({ machines: 0, vcpus: 0, memory_mib: 0, disk_gib: 0 }, usage, "e")).toEqual([]);
  });
  it("reads the change alone while the usage is not known", () => {
    expect(deltaLines({ machines: 0, vcpus: 3, memory_mib: 0, disk_gib: 0 }, undefined, "e")).toEqual([
      { dimension: "vcpus", text: "+3 vCPUs", over: false },
    ]);
  });
});
