// ANSI colours of a log line (Terraform's and scripts' output carry SGR escapes), read into
// segments that the view renders as text inside styled spans: the line's text is never parsed as
// markup, so a line that holds "<script>" shows those characters. Only colours, bold and
// underline are kept; every other escape sequence is dropped.

export interface Segment {
  text: string;
  /** CSS classes: ansi-fg-<n> (0–7, 8–15 bright), ansi-bg-<n>, ansi-bold, ansi-underline. */
  classes: string[];
}

// CSI sequences (ESC [ params final) and the rarer two-character escapes.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching ESC is the point
const ESCAPE = /\x1b\[([0-9;?]*)([@-~])|\x1b[@-Z\\-_]/g;

export function ansiSegments(line: string): Segment[] {
  const out: Segment[] = [];
  let fg = -1,
    bg = -1,
    bold = false,
    underline = false;
  let at = 0;
  const emit = (text: string) => {
    if (!text) return;
    const classes: string[] = [];
    if (fg >= 0) classes.push(`ansi-fg-${fg}`);
    if (bg >= 0) classes.push(`ansi-bg-${bg}`);
    if (bold) classes.push("ansi-bold");
    if (underline) classes.push("ansi-underline");
    const prev = out.at(-1);
    if (prev && prev.classes.join() === classes.join()) prev.text += text;
    else out.push({ text, classes });
  };
  for (const m of line.matchAll(ESCAPE)) {
    emit(line.slice(at, m.index));
    at = m.index! + m[0].length;
    if (m[2] !== "m") continue; // not a colour: dropped
    const codes = (m[1] || "0").split(";").map((c) => Number(c || "0"));
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i];
      if (c === 0) [fg, bg, bold, underline] = [-1, -1, false, false];
      else if (c === 1) bold = true;
      else if (c === 4) underline = true;
      else if (c === 22) bold = false;
      else if (c === 24) underline = false;
      else if (c >= 30 && c <= 37) fg = c - 30;
      else if (c === 39) fg = -1;
      else if (c >= 40 && c <= 47) bg = c - 40;
      else if (c === 49) bg = -1;
      else if (c >= 90 && c <= 97) fg = c - 90 + 8;
      else if (c >= 100 && c <= 107) bg = c - 100 + 8;
      else if ((c === 38 || c === 48) && codes[i + 1] === 5)
        i += 2; // 256 colours: not kept
      else if ((c === 38 || c === 48) && codes[i + 1] === 2) i += 4; // true colour: not kept
    }
  }
  emit(line.slice(at));
  return out;
}

// Built once: toLocaleTimeString builds a formatter at every call, which for the rows of a busy
// log was most of a long task.
const clock = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });

/** lineTime is when a line was written, as the reader's clock says it: "14:03:07". */
export function lineTime(at: string): string {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return "";
  return clock.format(d);
}
