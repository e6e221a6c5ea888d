// The log's collapsible sections per step (#29 item 13): which rows show given folded sections,
// and what their header rows say.
import { describe, expect, it } from "vitest";
import { headerSection, headerText, isHeader, rowOf, rows, sectionKey, sections, type SectionLine } from "./sections";

// Run r1: db's apply (2 lines), app #0 and app #1 interleaved, app #0 again; run r2: app #0.
const log: SectionLine[] = [
  { run: "r1", step: "s-db", job: "db", execution: 0 },
  { run: "r1", step: "s-db", job: "db", execution: 0 },
  { run: "r1", step: "s-a0", job: "app", execution: 0 },
  { run: "r1", step: "s-a1", job: "app", execution: 1 },
  { run: "r1", step: "s-a0", job: "app", execution: 0 },
  { run: "r2", step: "s-b0", job: "app", execution: 0 },
  { run: "r2", step: "s-b0", job: "app", execution: 0 },
];
const at = (i: number) => log[i];

describe("log sections", () => {
  it("splits the lines into stretches of one step within one run", () => {
    const secs = sections(log.length, at);
    expect(secs.map((s) => [s.key, s.start, s.count])).toEqual([
      ["r1/s-db", 0, 2],
      ["r1/s-a0", 2, 1],
      ["r1/s-a1", 3, 1],
      ["r1/s-a0", 4, 1],
      ["r2/s-b0", 5, 2],
    ]);
    // A line of no step falls back to its machine; one of neither has no section.
    expect(sectionKey({ run: "r", job: "app", execution: 2 })).toBe("r/app#2");
    expect(sectionKey({ run: "r" })).toBe("");
    const loose = [{ run: "r" }, { run: "r", step: "s" }, { run: "r" }];
    const ls = sections(loose.length, (i) => loose[i]);
    expect(ls.map((s) => [s.key, s.start, s.count])).toEqual([["r/s", 1, 1]]);
    expect(rows(loose.length, ls, new Set())).toEqual([0, -1, 1, 2]);
  });

  it("shows every line under its header when nothing is folded", () => {
    const secs = sections(log.length, at);
    const r = rows(log.length, secs, new Set());
    expect(r).toEqual([-1, 0, 1, -2, 2, -3, 3, -4, 4, -5, 5, 6]);
    expect(r.filter(isHeader).map(headerSection)).toEqual([0, 1, 2, 3, 4]);
  });

  it("shows a folded section's header row alone, every stretch of its step", () => {
    const secs = sections(log.length, at);
    expect(rows(log.length, secs, new Set(["r1/s-db"]))).toEqual([-1, -2, 2, -3, 3, -4, 4, -5, 5, 6]);
    // app #0's two stretches fold together, each keeping its header; app #1 stays open.
    expect(rows(log.length, secs, new Set(["r1/s-a0", "r2/s-b0"]))).toEqual([-1, 0, 1, -2, -3, 3, -4, -5]);
  });

  it("finds the row a line is drawn at, none when it is folded away", () => {
    const secs = sections(log.length, at);
    const open = rows(log.length, secs, new Set());
    const folded = rows(log.length, secs, new Set(["r1/s-db"]));
    expect(rowOf(open, 1)).toBe(2);
    expect(rowOf(folded, 1)).toBe(-1);
    expect(rowOf(folded, 6)).toBe(9);
  });

  it("heads a section with its step's name, its machine and its line count", () => {
    const secs = sections(log.length, at);
    expect(headerText(secs[0], { "s-db": "apply" })).toBe("apply · db #0 · 2 lines");
    expect(headerText(secs[2])).toBe("app #1 · 1 line");
    expect(headerText({ key: "r/x", start: 0, count: 3, job: "build" })).toBe("build · 3 lines");
  });
});
