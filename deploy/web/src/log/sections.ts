// Collapsible sections of a log, free of React (#29 item 13). A section is a stretch of
// consecutive lines of one step (of one job's machine when a line names no step) within one
// run; it is drawn under a header row (step name, machine, line count) that folds and unfolds
// it. The log stays a fixed-row virtual list: a folded section is its header row alone.
//
// Rows are never listed one by one (a 100 000-line log would allocate that much each frame):
// the sections are kept in order with the row each starts at (a prefix sum over the sections,
// O(sections) per draw), and a row's line or a line's row is a binary search among them.
// The sections themselves are extended as lines arrive (O(new lines)), shifted when the oldest
// lines are dropped or earlier ones are put before the first (O(sections), and the new lines'),
// and rebuilt only when the buffer is emptied.
//
// A section's fold key is its run and step, not its position: the buffer's indexes shift when
// earlier lines are prepended, and machines running in parallel interleave their lines, so one
// step may have several stretches; folding one folds them all (each keeps its header row).
// Lines that name neither a step nor a job (an ISO's may not) are a stretch with no header
// that cannot be folded.
import { machineLabel } from "../numbering";

/** The fields of a log line a section is made from. */
export interface SectionLine {
  run: string;
  step?: string;
  job?: string;
  execution?: number;
}

export interface Section {
  /** The fold key: run/step (run/job#execution for a line with no step); "" for no header. */
  key: string;
  /** The section's first line's index in the buffer, and how many lines it has. */
  start: number;
  count: number;
  step?: string;
  job?: string;
  execution?: number;
  /** Its first line starts a run (the run's separator is drawn on its first row). */
  runStart: boolean;
}

/** sectionKey is a line's fold key; "" for a line of no step and no job (no header). */
export function sectionKey(l: SectionLine): string {
  if (l.step) return `${l.run}/${l.step}`;
  if (l.job) return `${l.run}/${l.job}#${l.execution ?? ""}`;
  return "";
}

const sameSection = (a: SectionLine, b: SectionLine) =>
  a.run === b.run && a.step === b.step && (!!a.step || (a.job === b.job && a.execution === b.execution));

/** Where a buffer's lines moved since: how many went from its start, how many were put before it. */
export interface Moves {
  /** How many of its oldest lines it has dropped so far. */
  shifted: number;
  /** How many lines it has put before its first so far. */
  prepended: number;
  /** A number that changes whenever it is emptied. */
  shape: number;
}

/**
 * Sections splits a buffer's lines into stretches of one key each and keeps them up to date
 * with the buffer: update extends them with the lines appended since, drops the lines the
 * buffer dropped, adds the lines put before the first, and rebuilds them when the buffer was
 * emptied (or dropped and prepended between two updates).
 */
export class Sections {
  list: Section[] = [];
  private length = 0;
  private moves: Moves = { shifted: 0, prepended: 0, shape: -1 };

  /**
   * update brings the sections to the buffer's length lines (read through at), moves saying
   * where its lines went since the last update. It returns the list.
   */
  update(length: number, at: (i: number) => SectionLine, moves: Moves = { shifted: 0, prepended: 0, shape: 0 }): Section[] {
    const gone = moves.shifted - this.moves.shifted;
    const added = moves.prepended - this.moves.prepended;
    // Anything but lines appended and either the oldest dropped or earlier ones put first:
    // built again from the start.
    if (moves.shape !== this.moves.shape || gone < 0 || added < 0 || (gone > 0 && added > 0) || length < this.length - gone + added) {
      this.list = [];
      this.length = 0;
    } else if (added > 0) {
      const head = new Sections().update(added, at);
      for (const s of this.list) s.start += added;
      const first = this.list[0];
      const last = head[head.length - 1];
      if (first && sameSection(at(added - 1), at(added))) {
        // The earlier lines end the stretch the held ones began.
        last.count += first.count;
        this.list = head.concat(this.list.slice(1));
      } else {
        if (first) first.runStart = at(added - 1).run !== at(added).run;
        this.list = head.concat(this.list);
      }
      this.length += added;
    } else if (gone > 0) {
      this.length = Math.max(0, this.length - gone);
      let keep = 0;
      for (const s of this.list) {
        s.start -= gone;
        if (s.start + s.count <= 0) continue;
        if (s.start <= 0) {
          // Cut by the drop (or now first): nothing before it to be separated from.
          s.count += s.start;
          s.start = 0;
          s.runStart = false;
        }
        this.list[keep++] = s;
      }
      this.list.length = keep;
    }
    for (let i = this.length; i < length; i++) {
      const l = at(i);
      const last = this.list[this.list.length - 1];
      const prev = i > 0 ? at(i - 1) : null;
      if (last && prev && last.start + last.count === i && sameSection(prev, l)) {
        last.count++;
        continue;
      }
      this.list.push({
        key: sectionKey(l),
        start: i,
        count: 1,
        step: l.step,
        job: l.job,
        execution: l.execution,
        runStart: !!prev && prev.run !== l.run,
      });
    }
    this.length = length;
    this.moves = { ...moves };
    return this.list;
  }
}

/** sections splits length lines (read through at) into stretches of one key each. */
export function sections(length: number, at: (i: number) => SectionLine): Section[] {
  return new Sections().update(length, at);
}

/** Layout is where each section's rows start, and how many rows there are. */
export interface Layout {
  secs: Section[];
  folded: ReadonlySet<string>;
  /** The row of each section's first row (its header, or its first line when it has none). */
  starts: number[];
  rows: number;
}

const isFolded = (s: Section, folded: ReadonlySet<string>) => s.key !== "" && folded.has(s.key);

/** layout lays the sections out: a header row each (those with a key), then their lines unless folded. */
export function layout(secs: Section[], folded: ReadonlySet<string>): Layout {
  const starts = new Array<number>(secs.length);
  let row = 0;
  for (let s = 0; s < secs.length; s++) {
    starts[s] = row;
    row += (secs[s].key ? 1 : 0) + (isFolded(secs[s], folded) ? 0 : secs[s].count);
  }
  return { secs, folded, starts, rows: row };
}

/** A row of the list: a section's header (line -1), or one of its lines (the line's index in the buffer). */
export interface Row {
  section: number;
  line: number;
}

/** rowAt is what the list draws at row r, or null past the end. */
export function rowAt(lay: Layout, r: number): Row | null {
  if (r < 0 || r >= lay.rows) return null;
  // The last section starting at or before r.
  let lo = 0;
  let hi = lay.starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (lay.starts[mid] <= r) lo = mid;
    else hi = mid - 1;
  }
  const sec = lay.secs[lo];
  const off = r - lay.starts[lo] - (sec.key ? 1 : 0);
  return { section: lo, line: off < 0 ? -1 : sec.start + off };
}

/** sectionOf is the index of the section holding the buffer's line i, -1 for none. */
export function sectionOf(secs: Section[], i: number): number {
  let lo = 0;
  let hi = secs.length - 1;
  if (hi < 0 || i < secs[0].start) return -1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (secs[mid].start <= i) lo = mid;
    else hi = mid - 1;
  }
  return i < secs[lo].start + secs[lo].count ? lo : -1;
}

/** rowOf is the row the buffer's line i is drawn at, or -1 when it is folded away (or not held). */
export function rowOf(lay: Layout, i: number): number {
  const s = sectionOf(lay.secs, i);
  if (s < 0 || isFolded(lay.secs[s], lay.folded)) return -1;
  const sec = lay.secs[s];
  return lay.starts[s] + (sec.key ? 1 : 0) + (i - sec.start);
}

/** headerText is a section's header: "apply · app #1 · 42 lines". */
export function headerText(sec: Section, stepNames: Record<string, string> = {}): string {
  const name = (sec.step && stepNames[sec.step]) || "";
  const who = sec.job ? machineLabel(sec.job, sec.execution ?? null) : "";
  const lines = `${sec.count} ${sec.count === 1 ? "line" : "lines"}`;
  return [name, who, lines].filter(Boolean).join(" · ");
}
