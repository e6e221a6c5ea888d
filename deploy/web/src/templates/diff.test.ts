import { describe, expect, it } from "vitest";
import type { Schemas } from "../api/client";
import { compareWith, definitionChanges } from "./diff";

type Definition = Schemas["Definition"];
const src = { repo: "https://git.example.org/t.git", branch: "main", path: "jobs/vm" };

function def(): Definition {
  return {
    name: "t",
    phases: [
      { name: "database", jobs: [{ name: "db", source: { ...src }, parameters: [{ name: "cores", type: "integer", default: 1 }] }] },
      {
        name: "application",
        jobs: [
          {
            name: "app",
            source: { ...src, path: "jobs/app" },
            inputs: { db_host: "$" + "{jobs.db.outputs.ip}" },
            outputs: [{ name: "url" }],
          },
          { name: "worker", source: { ...src, path: "jobs/worker" } },
        ],
      },
    ],
    actions: [{ name: "rotate", kind: "script", job: "app", path: "rotate.sh" }],
  } as Definition;
}

describe("definitionChanges", () => {
  it("finds nothing between equal definitions", () => {
    expect(definitionChanges(def(), def())).toEqual([]);
  });

  it("names added, removed and changed jobs and what changed in them", () => {
    const b = def();
    b.phases[1].jobs = b.phases[1].jobs.filter((j) => j.name !== "worker");
    b.phases[0].jobs[0].parameters = [
      { name: "cores", type: "integer", default: 2 },
      { name: "disk_gb", type: "integer" },
    ] as never;
    b.phases[0].jobs[0].source.branch = "v2";
    b.phases[1].jobs[0].inputs = {};
    b.phases[1].jobs.push({ name: "cache", source: { ...src, path: "jobs/cache" } });
    const c = definitionChanges(def(), b);
    expect(c).toContainEqual({ subject: "job worker", kind: "removed", details: [] });
    expect(c).toContainEqual({ subject: "job cache", kind: "added", details: [] });
    expect(c).toContainEqual({
      subject: "job db",
      kind: "changed",
      details: ["source branch: main → v2", "parameter cores changed", "parameter disk_gb added"],
    });
    expect(c).toContainEqual({ subject: "job app", kind: "changed", details: ["input db_host removed"] });
    expect(c).toHaveLength(4);
  });

  it("sees a job moved to another phase, a new phase, and actions", () => {
    const b = def();
    const worker = b.phases[1].jobs.pop()!;
    b.phases.push({ name: "workers", jobs: [worker] });
    b.actions = [
      { name: "rotate", kind: "script", job: "app", path: "rotate2.sh" },
      { name: "backup", kind: "script", job: "db", path: "b.sh" },
    ] as never;
    const c = definitionChanges(def(), b);
    expect(c).toContainEqual({ subject: "phase workers", kind: "added", details: [] });
    expect(c).toContainEqual({ subject: "job worker", kind: "changed", details: ["moved from phase application to workers"] });
    expect(c).toContainEqual({ subject: "action rotate", kind: "changed", details: ["path changed"] });
    expect(c).toContainEqual({ subject: "action backup", kind: "added", details: [] });
  });
});

describe("compareWith", () => {
  it("compares any two versions: the one asked, else the one before, else the next", () => {
    expect(compareWith([1, 2, 3, 4], 4, 1)).toBe(1);
    expect(compareWith([1, 2, 3, 4], 2, 4)).toBe(4);
    expect(compareWith([1, 2, 3, 4], 4, 0)).toBe(3);
    expect(compareWith([1, 2, 3, 4], 4, 4)).toBe(3); // not with itself
    expect(compareWith([1, 2, 3, 4], 4, 9)).toBe(3); // not with a version it does not have
    expect(compareWith([1, 2, 3], 1, 0)).toBe(2);
    expect(compareWith([1], 1, 0)).toBe(0);
  });
});
