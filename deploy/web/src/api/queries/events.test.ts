import { describe, expect, it } from "vitest";
import type { HorizonEvent } from "../client";
import { eventKeys, mergeKeys, streamKeys } from "./events";

const at = "2026-01-01T00:00:00Z";
const S = "11111111-1111-1111-1111-111111111111";
const I = "22222222-2222-2222-2222-222222222222";
const R = "33333333-3333-3333-3333-333333333333";

describe("eventKeys", () => {
  it("a stack's own event makes its page, the stack list and the startup order stale", () => {
    const e: HorizonEvent = { type: "stack", id: S, state: "deployed", at };
    expect(eventKeys(e)).toEqual([["stacks"], ["startup"], ["stack", S]]);
  });

  it("a run's or step's event names its stack by stack_id", () => {
    for (const type of ["run", "step"] as const) {
      const e: HorizonEvent = { type, id: R, stack_id: S, run_id: R, state: "running", at };
      expect(eventKeys(e)).toContainEqual(["stack", S]);
      expect(eventKeys(e)).not.toContainEqual(["stack", R]);
    }
  });

  it("an ISO's event, and its runs', make the ISO list and that ISO stale", () => {
    expect(eventKeys({ type: "iso", id: I, state: "built", at })).toEqual([["isos"], ["iso", I], ["stacks"], ["startup"]]);
    const run: HorizonEvent = { type: "run", id: R, iso_id: I, state: "running", at };
    expect(eventKeys(run)).toEqual([["isos"], ["iso", I], ["stacks"], ["startup"]]);
  });

  it("a drift event of a stack makes its page stale", () => {
    expect(eventKeys({ type: "drift", id: S, stack_id: S, state: "found", at })).toContainEqual(["stack", S]);
  });
});

describe("streamKeys", () => {
  it("a reset makes everything stale: events were missed", () => {
    expect(streamKeys("reset", null)).toBe("all");
  });

  it("only event messages name keys", () => {
    expect(streamKeys("lagging", { id: "9" })).toEqual([]);
    expect(streamKeys("event", { type: "stack", id: S, state: "draft", at })).toContainEqual(["stack", S]);
  });
});

describe("mergeKeys", () => {
  it("names each key once over a burst of events", () => {
    const run: HorizonEvent = { type: "run", id: R, stack_id: S, run_id: R, state: "running", at };
    const step: HorizonEvent = { type: "step", id: R, stack_id: S, run_id: R, state: "running", at };
    expect(mergeKeys(mergeKeys([], eventKeys(run)), eventKeys(step))).toEqual([["stacks"], ["startup"], ["stack", S]]);
  });

  it("is everything once a reset is among them", () => {
    expect(mergeKeys([["stacks"]], "all")).toBe("all");
    expect(mergeKeys("all", [["stacks"]])).toBe("all");
  });
});
