// Collapsible sections of a log, free of React (#29 item 13). A section is a stretch of
// consecutive lines of one step (of one job's machine when a line names no step) within one
// run; it starts with a header row (step name, job #index, line count) that folds and unfolds
// it. The log stays a fixed-row virtual list: folding filters the rows the list draws, so a
// folded section is its header row alone and the list's height is rows × row height.
//
// A section's fold key is its run and step, not its position: the buffer's indexes shift when
// earlier lines are prepended, and machines running in parallel interleave their lines, so one
// step may have several stretches; folding one folds them all (each keeps its header row).
// Lines that name neither a step nor a job (none today, but an ISO's stage may) have no
// section and are always shown.
import { machineLabel } from "../numbering";

/** The fields of a log line a section is made from. */
export interface SectionLine {
  run: string;
  step?: string;
  job?: string;
  execution?: number;
}

export interface Section {
  /** The fold key: run/step (run/job#execution for a line with no step). */
  key: string;
  /** The section's first line's index in the buffer, and how many lines it has. */
  start: number;
  count: number;
  step?: string;
  job?: string;
  execution?: number;
}

/**
 * A row of the list: a line's index in the buffer (≥ 0), or a section's header as
 * -(its index in the sections + 1). Plain numbers keep a 100 000-line log's rows cheap.
 */
export type Row = number;

export const isHeader = (r: Row) => r < 0;
export const headerSection = (r: Row) => -r - 1;

/** sectionKey is a line's fold key; "" for a line of no step and no job (no section). */
export function sectionKey(l: SectionLine): string {
  if (l.step) return `${l.run}/${l.step}`;
  if (l.job) return `${l.run}/${l.job}#${l.execution ?? ""}`;
  return "";
}

/** sections splits length lines (read through at) into stretches of one key each. */
export function sections(length: number, at: (i: number) => SectionLine): Section[] {
  const out: Section[] = [];
  let cur: Section | null = null;
  let prev: SectionLine | null = null;
  for (let i = 0; i < length; i++) {
    const l = at(i);
    // Compared field by field, a key built only where a section starts: this runs over every
    // held line (up to the buffer's cap) when lines arrive.
    const same = prev !== null && prev.run === l.run && prev.step === l.step && (l.step || (prev.job === l.job && prev.execution === l.execution));
    prev = l;
    if (same) {
      if (cur) cur.count++;
      continue;
    }
    const key = sectionKey(l);
    cur = key ? { key, start: i, count: 1, step: l.step, job: l.job, execution: l.execution } : null;
    if (cur) out.push(cur);
  }
  return out;
}

/**
 * rows lists what the list draws: each section's header, then its lines unless its key is
 * folded, and the lines of no section as they come.
 */
export function rows(length: number, secs: Section[], folded: ReadonlySet<string>): Row[] {
  const out: Row[] = [];
  let i = 0;
  for (let s = 0; s < secs.length; s++) {
    const sec = secs[s];
    for (; i < sec.start; i++) out.push(i);
    out.push(-(s + 1));
    if (!folded.has(sec.key)) for (let k = 0; k < sec.count; k++) out.push(sec.start + k);
    i = sec.start + sec.count;
  }
  for (; i < length; i++) out.push(i);
  return out;
}

/** rowOf is the row a line is drawn at, or -1 when it is folded away (or not held). */
export function rowOf(list: Row[], line: number): number {
  return line < 0 ? -1 : list.indexOf(line);
}

/** headerText is a section's header: "apply · app #1 · 42 lines". */
export function headerText(sec: Section, stepNames: Record<string, string> = {}): string {
  const name = (sec.step && stepNames[sec.step]) || "";
  const who = sec.job ? machineLabel(sec.job, sec.execution ?? null) : "";
  const lines = `${sec.count} ${sec.count === 1 ? "line" : "lines"}`;
  return [name, who, lines].filter(Boolean).join(" · ");
}
