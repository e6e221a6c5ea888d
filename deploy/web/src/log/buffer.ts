// LogBuffer holds a stack's log lines outside React state: appending is O(1), memory is bounded
// by `cap` (the oldest lines go first, and `dropped` says how many), and the view re-renders
// from `version` only. Search runs over what is loaded.
import type { LogLine } from "../api/client";

export class LogBuffer {
  private lines: LogLine[] = [];
  private start = 0;
  /** How many lines are not held for the cap: the oldest pushed out, and earlier ones that did not fit. */
  dropped = 0;
  version = 0;
  /** How many of the held lines have gone from the start for the cap, so far. */
  shifted = 0;
  /** How many lines have been put before the first, so far. */
  prepended = 0;
  /** shape changes when all the lines go (what is built over the lines is rebuilt). */
  shape = 0;
  // The ids held, by run: no key string made per line.
  private ids = new Map<string, Set<string>>();
  // One copy of each run, step and job name: every line repeats them, and a full buffer held
  // 200 000 copies of each, which the garbage collector went over again and again.
  private names = new Map<string, string>();

  constructor(public cap = 200_000) {}

  get length() {
    return this.lines.length - this.start;
  }

  at(i: number): LogLine {
    return this.lines[this.start + i];
  }

  private held(l: LogLine): boolean {
    return this.ids.get(l.run)?.has(l.id) ?? false;
  }

  private hold(l: LogLine) {
    l.run = this.name(l.run);
    if (l.step) l.step = this.name(l.step);
    if (l.job) l.job = this.name(l.job);
    const ids = this.ids.get(l.run);
    if (ids) ids.add(l.id);
    else this.ids.set(l.run, new Set([l.id]));
  }

  private name(n: string): string {
    const had = this.names.get(n);
    if (had !== undefined) return had;
    this.names.set(n, n);
    return n;
  }

  push(l: LogLine): boolean {
    if (this.held(l)) return false; // a resumed stream may repeat the last line
    this.hold(l);
    this.lines.push(l);
    if (this.length > this.cap) {
      const old = this.lines[this.start];
      this.ids.get(old.run)?.delete(old.id);
      this.start++;
      this.dropped++;
      this.shifted++;
      // Compact now and then so the array does not keep the dropped lines alive.
      if (this.start > this.cap / 2) {
        this.lines = this.lines.slice(this.start);
        this.start = 0;
      }
    }
    this.version++;
    return true;
  }

  /**
   * prepend puts older lines (in order, all older than the first held) before the first,
   * within the cap: when they do not all fit, the oldest of them are dropped. It returns how
   * many went in, so a reader scrolled in the log can keep its place.
   */
  prepend(older: LogLine[]): number {
    const fresh = older.filter((l) => !this.held(l));
    const room = Math.max(0, this.cap - this.length);
    const keep = fresh.length <= room ? fresh : fresh.slice(fresh.length - room);
    this.dropped += fresh.length - keep.length;
    for (const l of keep) this.hold(l);
    this.lines = keep.concat(this.start ? this.lines.slice(this.start) : this.lines);
    this.start = 0;
    this.prepended += keep.length;
    this.version++;
    return keep.length;
  }

  clear() {
    this.lines = [];
    this.start = 0;
    this.dropped = 0;
    this.ids.clear();
    this.names.clear();
    this.shape++;
    this.version++;
  }

  /** search is the indices of the lines whose text contains q (case-insensitive). */
  search(q: string): number[] {
    const needle = q.toLowerCase();
    const out: number[] = [];
    if (!needle) return out;
    for (let i = 0; i < this.length; i++) if (this.at(i).text.toLowerCase().includes(needle)) out.push(i);
    return out;
  }

  /** indexOf is the index of a held line, -1 at once (no scan) for one not held. */
  indexOf(run: string, id: string): number {
    if (!this.ids.get(run)?.has(id)) return -1;
    for (let i = 0; i < this.length; i++) {
      const l = this.at(i);
      if (l.run === run && l.id === id) return i;
    }
    return -1;
  }
}
