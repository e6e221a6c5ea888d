import { describe, expect, it } from "vitest";
import { layout } from "../pipeline/layout";
import { availability, isoPipeline, summaryText, type ISORun } from "./isos";

const stage = (id: string, s: string, state: string, clone: number | null = null) =>
  ({
    id,
    stage: s,
    clone,
    state,
    attempt: 1,
    reason: state === "skipped" ? "not selected" : null,
    error: state === "failed" ? "boom" : null,
    started_at: null,
    finished_at: null,
  }) as ISORun["stages"][number];

const run = (stages: ISORun["stages"]): ISORun => ({
  id: "r1",
  iso_id: "i1",
  kind: "iso_build",
  state: "running",
  actor_id: null,
  error: null,
  allowed_actions: [],
  created_at: "2026-01-01T00:00:00Z",
  started_at: null,
  finished_at: null,
  stages,
  summary: { done: [], skipped: [], failed: [], not_run: [] },
});

describe("isoPipeline", () => {
  it("makes a column per stage in run order and a card per clone", () => {
    const p = isoPipeline(
      run([
        stage("a", "preflight", "succeeded"),
        stage("b", "image", "skipped"),
        stage("c", "vm-create", "running"),
        stage("d", "clones", "pending", 1),
        stage("e", "clones", "pending", 0),
      ]),
    );
    expect(p.columns.map((c) => [c.phase, c.name, c.cards.length])).toEqual([
      [0, "preflight", 1],
      [1, "image", 1],
      [2, "vm-create", 1],
      [3, "clones", 2],
    ]);
    expect(p.run.id).toBe("r1");
    expect("stages" in p.run).toBe(false);
    // The stacks' layout draws it: clones in clone order, a stage's reason and error kept.
    const cols = layout(p);
    const clones = cols[3].items.map((it) => (it.kind === "card" ? it.card.execution : -1));
    expect(clones).toEqual([0, 1]);
    expect(cols[1].items[0].kind === "card" && cols[1].items[0].card.reason).toBe("not selected");
    expect(cols.map((c) => c.state)).toEqual(["succeeded", "skipped", "running", "pending"]);
  });
});

describe("availability", () => {
  const artifact = { value: "local:iso/x.iso", storage: "local", shared: false, node: "pve1" };
  it("says where a built ISO may be used", () => {
    expect(availability({ state: "built", artifact: { ...artifact, storage: "ceph", shared: true } })).toBe(
      "every node of the cluster (shared storage ceph)",
    );
    expect(availability({ state: "built", artifact })).toBe("node pve1 only (storage local is not shared)");
    expect(availability({ state: "built", artifact }, [{ node: "pve2" }, { node: "pve1" }])).toBe(
      "nodes pve1, pve2 only (storage local is not shared)",
    );
  });
  it("offers nothing not built", () => {
    expect(availability({ state: "building", artifact: null })).toBe("not available (not built)");
    expect(availability({ state: "failed", artifact })).toBe("not available (not built)");
  });
});

describe("summaryText", () => {
  it("names each group that has stages", () => {
    expect(summaryText({ done: ["preflight", "image"], skipped: ["vm-create"], failed: [], not_run: [] })).toBe(
      "done: preflight, image · skipped: vm-create",
    );
    expect(summaryText({ done: [], skipped: [], failed: [], not_run: [] })).toBe("nothing ran");
  });
});
