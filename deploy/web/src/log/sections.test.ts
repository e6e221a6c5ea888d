// The log's collapsible sections per step (#29 item 13): which rows show given folded sections,
// where a line is drawn, what the header rows say, and the sections kept up to date as lines
// arrive, the oldest are dropped and earlier ones are put first.
import { describe, expect, it } from "vitest";
import { headerText, layout, rowAt, rowOf, sectionKey, sectionOf, sections, Sections, type Layout, type SectionLine } from "./sections";

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

/** drawn is every row of a layout, a header as "h<section>", a line as its index. */
const drawn = (lay: Layout) =>
  Array.from({ length: lay.rows }, (_, r) => rowAt(lay, r)).map((x) => (x!.line < 0 ? `h${x!.section}` : x!.line));

describe("log sections", () => {
  it("splits the lines into stretches of one step within one run", () => {
    const secs = sections(log.length, at);
    expect(secs.map((s) => [s.key, s.start, s.count, s.runStart])).toEqual([
      ["r1/s-db", 0, 2, false],
      ["r1/s-a0", 2, 1, false],
      ["r1/s-a1", 3, 1, false],
      ["r1/s-a0", 4, 1, false],
      ["r2/s-b0", 5, 2, true],
    ]);
    // A line of no step falls back to its machine; one of neither is a stretch with no header.
    expect(sectionKey({ run: "r", job: "app", execution: 2 })).toBe("r/app#2");
    expect(sectionKey({ run: "r" })).toBe("");
    const loose = [{ run: "r" }, { run: "r" }, { run: "r", step: "s" }, { run: "r" }];
    const ls = sections(loose.length, (i) => loose[i]);
    expect(ls.map((s) => [s.key, s.start, s.count])).toEqual([
      ["", 0, 2],
      ["r/s", 2, 1],
      ["", 3, 1],
    ]);
    expect(drawn(layout(ls, new Set(["r/s", ""])))).toEqual([0, 1, "h1", 3]);
  });

  it("shows every line under its header when nothing is folded", () => {
    const lay = layout(sections(log.length, at), new Set());
    expect(drawn(lay)).toEqual(["h0", 0, 1, "h1", 2, "h2", 3, "h3", 4, "h4", 5, 6]);
    expect(rowAt(lay, lay.rows)).toBeNull();
    expect(rowAt(lay, -1)).toBeNull();
  });

  it("shows a folded section's header row alone, every stretch of its step", () => {
    const secs = sections(log.length, at);
    expect(drawn(layout(secs, new Set(["r1/s-db"])))).toEqual(["h0", "h1", 2, "h2", 3, "h3", 4, "h4", 5, 6]);
    // app #0's two stretches fold together, each keeping its header; app #1 stays open.
    expect(drawn(layout(secs, new Set(["r1/s-a0", "r2/s-b0"])))).toEqual(["h0", 0, 1, "h1", "h2", 3, "h3", "h4"]);
  });

  it("finds the row a line is drawn at, none when it is folded away", () => {
    const secs = sections(log.length, at);
    const open = layout(secs, new Set());
    const folded = layout(secs, new Set(["r1/s-db"]));
    expect(rowOf(open, 1)).toBe(2);
    expect(rowOf(folded, 1)).toBe(-1);
    expect(rowOf(folded, 6)).toBe(9);
    expect(rowOf(open, 7)).toBe(-1);
    expect(sectionOf(secs, 4)).toBe(3);
    // Every line's row draws that line.
    for (let i = 0; i < log.length; i++) expect(rowAt(open, rowOf(open, i))!.line).toBe(i);
  });

  it("heads a section with its step's name, its machine and its line count", () => {
    const secs = sections(log.length, at);
    expect(headerText(secs[0], { "s-db": "apply" })).toBe("apply · db #0 · 2 lines");
    expect(headerText(secs[2])).toBe("app #1 · 1 line");
    expect(headerText({ key: "r/x", start: 0, count: 3, job: "build", runStart: false })).toBe("build · 3 lines");
  });

  it("is kept up to date as lines arrive, the oldest go and earlier ones come first", () => {
    const held = [...log];
    const moves = { shifted: 0, prepended: 0, shape: 0 };
    const s = new Sections();
    const check = () => expect(s.update(held.length, (i) => held[i], moves)).toEqual(sections(held.length, (i) => held[i]));
    for (let n = 0; n <= log.length; n++) expect(s.update(n, at, moves)).toEqual(sections(n, at));
    // The two oldest lines are dropped (db's section goes), then one more (a stretch is cut).
    held.splice(0, 2);
    moves.shifted = 2;
    check();
    held.push({ run: "r2", step: "s-b0", job: "app", execution: 0 }, { run: "r3", step: "s-c", job: "db", execution: 0 });
    held.splice(0, 1);
    moves.shifted = 3;
    check();
    // Earlier lines put first: of the first held line's step (its stretch grows back), then of
    // an earlier run (the first held line now starts a run), and lines appended alongside.
    held.unshift({ run: "r1", step: "s-db", job: "db", execution: 0 }, { run: "r1", step: "s-a1", job: "app", execution: 1 });
    moves.prepended = 2;
    check();
    held.unshift({ run: "r0", step: "s-z", job: "db", execution: 0 }, { run: "r0", step: "s-z", job: "db", execution: 0 });
    held.push({ run: "r3", step: "s-c", job: "db", execution: 0 });
    moves.prepended = 4;
    check();
    // Emptied: built again.
    held.splice(0, held.length, { run: "r9", step: "s-q", job: "db", execution: 0 });
    moves.shape = 1;
    check();
  });

  it("puts earlier lines first without reading the held ones again", () => {
    const held = [...log];
    const moves = { shifted: 0, prepended: 0, shape: 0 };
    const s = new Sections();
    s.update(held.length, (i) => held[i], moves);
    held.unshift({ run: "r0", step: "s-z", job: "db", execution: 0 });
    moves.prepended = 1;
    const read = new Set<number>();
    s.update(
      held.length,
      (i) => {
        read.add(i);
        return held[i];
      },
      moves,
    );
    // The new line and its neighbour (to tell whether they are one stretch), no more.
    expect([...read].sort()).toEqual([0, 1]);
  });
});
