import { describe, expect, it } from "vitest";
import type { Card, Pipeline } from "../api/client";
import { duration, GROUP_ABOVE, layout, summaryState, waitingText } from "./layout";

let n = 0;
function card(job: string, execution: number | null, state: Card["state"], extra: Partial<Card> = {}): Card {
  return {
    step_id: `s${++n}`,
    job,
    execution,
    kind: "apply",
    state,
    attempt: 1,
    node: "pve1",
    started_at: null,
    finished_at: null,
    gate_wait_ms: 0,
    work_ms: 0,
    error: null,
    reason: null,
    waiting_on: null,
    allowed_actions: [],
    ...extra,
  };
}
const run = {
  id: "r",
  stack_id: "s",
  kind: "deploy",
  state: "running",
  actor_id: null,
  error: null,
  allowed_actions: [],
  created_at: "",
  started_at: null,
  finished_at: null,
} as Pipeline["run"];

describe("layout", () => {
  it("orders columns by phase and cards by execution", () => {
    const cols = layout({
      run,
      columns: [
        { phase: 1, name: "application", cards: [card("app", 2, "queued"), card("app", 0, "running"), card("app", 1, "succeeded")] },
        { phase: 0, name: "database", cards: [card("db", 0, "succeeded")] },
      ],
    });
    expect(cols.map((c) => c.name)).toEqual(["database", "application"]);
    expect(cols[1].items.map((i) => i.kind === "card" && i.card.execution)).toEqual([0, 1, 2]);
    expect(cols[0].state).toBe("succeeded");
    expect(cols[1].state).toBe("running");
  });

  it(`groups a job with more than ${GROUP_ABOVE} executions into one card with counts`, () => {
    const many = Array.from({ length: GROUP_ABOVE + 1 }, (_, i) => card("app", i, i < 4 ? "succeeded" : i === 4 ? "failed" : "held"));
    const cols = layout({ run, columns: [{ phase: 0, name: "p", cards: [...many, card("lb", 0, "running")] }] });
    expect(cols[0].items).toHaveLength(2);
    const g = cols[0].items[0];
    expect(g.kind).toBe("group");
    if (g.kind !== "group") return;
    expect(g.cards).toHaveLength(GROUP_ABOVE + 1);
    expect(g.counts).toEqual([
      ["failed", 1],
      ["held", 2],
      ["succeeded", 4],
    ]);
    expect(g.state).toBe("failed");
    const exactly = Array.from({ length: GROUP_ABOVE }, (_, i) => card("app", i, "queued"));
    expect(layout({ run, columns: [{ phase: 0, name: "p", cards: exactly }] })[0].items.every((i) => i.kind === "card")).toBe(true);
  });

  it("summarises states by urgency", () => {
    expect(summaryState(["succeeded", "skipped"])).toBe("succeeded");
    expect(summaryState(["skipped"])).toBe("skipped");
    expect(summaryState(["succeeded", "queued", "running"])).toBe("running");
    expect(summaryState(["held", "failed"])).toBe("failed");
    expect(summaryState([])).toBe("pending");
  });
});

describe("card text", () => {
  it("says how long a step ran", () => {
    expect(duration(null, null)).toBe("");
    expect(duration("2026-01-01T00:00:00Z", "2026-01-01T00:00:42Z")).toBe("42s");
    expect(duration("2026-01-01T00:00:00Z", "2026-01-01T00:01:05Z")).toBe("1m 05s");
    expect(duration("2026-01-01T00:00:00Z", null, Date.parse("2026-01-01T02:03:00Z"))).toBe("2h 03m");
  });

  it("says what a queued machine waits on", () => {
    expect(waitingText(card("a", 0, "queued"))).toBe("");
    expect(
      waitingText(
        card("a", 0, "queued", { waiting_on: { node: "pve2", position: 1, since: null, holder: { stack: "x", run: "y", step: "z" } } }),
      ),
    ).toBe("waits for node pve2's build slot (next in line, held by another build)");
    expect(waitingText(card("a", 0, "queued", { waiting_on: { node: "pve2", position: 3, since: null, holder: null } }))).toContain(
      "number 3 in line",
    );
  });
});

describe("phase numbers (#29 item 6)", () => {
  const phases = [{ jobs: [{ name: "db" }] }, { jobs: [{ name: "app" }] }];
  it("are the template's 1…n whatever the run's own phase positions", () => {
    // An edit's run: removals, builds and removals after replacing, three slots per phase.
    const cols = layout(
      {
        run,
        columns: [
          { phase: 2, name: "database", cards: [card("db", 0, "succeeded")] },
          { phase: 5, name: "application", cards: [card("app", 2, "succeeded")] },
          { phase: 6, name: "application (remove after replacing)", cards: [card("app", 0, "succeeded", { kind: "destroy" })] },
        ],
      },
      phases,
    );
    expect(cols.map((c) => `${c.number} ${c.name}`)).toEqual(["1 database", "2 application", "2 application (remove after replacing)"]);
  });

  it("follow the template on a removal, and columns of no template phase have none", () => {
    const cols = layout(
      {
        run,
        columns: [
          { phase: 0, name: "undo create-pool", cards: [card("create-pool", 1, "succeeded", { kind: "action_destroy" })] },
          { phase: 1, name: "application", cards: [card("app", 0, "succeeded", { kind: "destroy" })] },
          { phase: 2, name: "database", cards: [card("db", 0, "succeeded", { kind: "destroy" })] },
          { phase: 3, name: "removed from the template", cards: [card("gone", 0, "succeeded", { kind: "destroy" })] },
        ],
      },
      phases,
    );
    expect(cols.map((c) => c.number)).toEqual([null, 2, 1, null]);
  });

  it("number an ISO's stages by their place when there is no template", () => {
    expect(layout({ run, columns: [{ phase: 0, name: "preflight", cards: [card("preflight", null, "succeeded")] }] })[0].number).toBe(1);
  });
});
