// The live log of a stack or an ISO: backfilled and followed by one SSE stream (a stack's into
// its next runs, ?follow=true), filtered by job and execution (an ISO's by stage and clone) on
// the server (a new filter reopens the stream), held in a bounded LogBuffer and drawn
// virtualised (fixed row height), so 100 000 lines scroll smoothly. Pause stops following and
// counts the new lines; search runs over the loaded lines; each line has a link
// (?run=<run>&line=<run>/<id>: its run's log, scrolled to it). The filter is one choice of a
// job or one of its machines ("app", "app #1"); each line says when it was written; the first
// line of each run is marked (a separator, with the run's id); colours are rendered from ANSI
// escapes as styled text (./ansi), never as markup. Each step's lines are a section under a
// header row that folds and unfolds it (./sections): a folded section is its header alone in
// the fixed-row list, and a line jumped to (a link, a search match) unfolds its section first.
import { memo, useCallback, useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState } from "react";
import { flushSync } from "react-dom";
import { api, apiBase, call, getToken, type LogLine, type Schemas } from "../api/client";
import { nextTask, openStream } from "../sse";
import { LogBuffer } from "./buffer";
import { ansiSegments, lineTime } from "./ansi";
import { headerText, layout, rowAt, rowOf, sectionOf, Sections } from "./sections";
import { machineLabel } from "../numbering";

/** LineText is a line's text with its ANSI colours: text nodes in styled spans, never markup. */
export function LineText({ text }: { text: string }) {
  return (
    <span className="lt">
      {ansiSegments(text).map((seg, i) =>
        seg.classes.length ? (
          <span key={i} className={seg.classes.join(" ")}>
            {seg.text}
          </span>
        ) : (
          seg.text
        ),
      )}
    </span>
  );
}

const ROW = 18;
const HEIGHT = 420;
const OVERSCAN = 30;
/** Lines read first: the end of a long log, before the rest. */
const TAIL = 2000;
const YIELD_EVERY = 2000;
/** How long after the tail is drawn the lines before it are read, in ms. */
const SETTLE_MS = 1000;
/** The least time between two draws of new lines, in ms. */
const DRAW_EVERY = 100;

/** LogSource is whose log a LogView shows and how its routes are asked. */
export interface LogSource {
  /** The owner's route: /v1/stacks/{id} or /v1/isos/{id} (…/logs and …/logs/stream below it). */
  path: string;
  /** The stream token that opens its stream and its download. */
  token: Schemas["StreamTokenRequest"];
  /** The names of the job and execution filters in the log routes' queries. */
  jobParam: string;
  executionParam: string;
  /** What the filters are called on screen. */
  jobLabel: string;
  executionLabel: string;
  /** Query parameters that make the download answer NDJSON. */
  ndjson: Record<string, string>;
  /** The download reads ?tail= and ?before= (a stack's log); an ISO's run is read whole. */
  tail: boolean;
  /** The stream's event id of a line, to resume after it: run/id for a stack's (its stream follows
   * into the next runs), the id alone for an ISO's (one run a stream). */
  eventId: (l: LogLine) => string;
  /** The console screen a line's link opens. */
  page: string;
  /** The downloaded file's name. */
  file: string;
}

export function stackLog(id: string): LogSource {
  return {
    path: `/v1/stacks/${id}`,
    token: { purpose: "logs", stack_id: id },
    jobParam: "job",
    executionParam: "execution",
    jobLabel: "Job",
    executionLabel: "Execution",
    ndjson: {},
    tail: true,
    eventId: (l) => `${l.run}/${l.id}`,
    page: `/stacks/${id}`,
    file: `stack-${id}.log`,
  };
}

export function isoLog(id: string): LogSource {
  return {
    path: `/v1/isos/${id}`,
    token: { purpose: "iso_logs", iso_id: id },
    jobParam: "stage",
    executionParam: "clone",
    jobLabel: "Stage",
    executionLabel: "Clone",
    ndjson: { format: "ndjson" },
    tail: false,
    eventId: (l) => l.id,
    page: `/isos/${id}`,
    file: `iso-${id}.log`,
  };
}

/** LogView is memoized: the page around it re-renders every second (its clock). */
export const LogView = memo(function LogView({
  source,
  runId,
  follow = true,
  jobs,
  lineLink,
  stepNames,
}: {
  source: LogSource;
  /** The run shown first (the latest when the view opened); the stream follows into the next. */
  runId?: string;
  /** Follow into the stack's next runs; false shows runId's log alone (an older run chosen, or an ISO's run). */
  follow?: boolean;
  /** The jobs (an ISO's stages) and their executions' indexes (clones), for the filter. */
  jobs: { job: string; executions: number[] }[];
  lineLink?: string;
  /** What each step is called in its section's header (its kind), by step id. */
  stepNames?: Record<string, string>;
}) {
  const [firstRun] = useState(runId);
  const [job, setJob] = useState("");
  const [execution, setExecution] = useState("");
  const [paused, setPaused] = useState(false);
  const [q, setQ] = useState("");
  const [, setTick] = useState(0);
  // New lines while paused: the buffer's version now less its version at the pause.
  const [pausedAt, setPausedAt] = useState(0);
  const [err, setErr] = useState("");
  // The lines before the first tail are still being read.
  const [earlier, setEarlier] = useState(false);
  // The first read (the shown run's download) is over: a linked line not found by then is not
  // in the log (or not in the filter), and the view stops waiting for it.
  const [loaded, setLoaded] = useState(false);
  // A run's end may say that lines were stored while Redis was down and never streamed
  // (unstreamed > 0): the log is then read again from the download, which has them all, once
  // per run (the stream's end for a run already read again says so too).
  const [reread, setReread] = useState(0);
  const rereadRuns = useRef(new Set<string>());
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const buf = useMemo(() => new LogBuffer(), []);
  const scroller = useRef<HTMLDivElement>(null);
  // The folded sections' keys (run/step), and the sections, kept up to date with the buffer.
  const [folded, setFolded] = useState<ReadonlySet<string>>(new Set());
  const sectionIndex = useMemo(() => new Sections(), []);

  // biome-ignore lint/correctness/useExhaustiveDependencies: the log is read again only when what it shows changes; a new line link only picks the first read
  useEffect(() => {
    buf.clear();
    setPausedAt(0);
    setLoaded(false);
    // The lines are read again (a new filter, a new mount): a linked line is jumped to again
    // once it is back, or the view would stay where the emptied buffer left it (the top).
    jumpedTo.current = "";
    // At most one draw every DRAW_EVERY ms, however fast lines come: a busy stream drawn at
    // every frame left no time between frames. A draw is committed in its animation frame
    // (flushSync), so the scroll to the end that follows it is laid out with the frame, not
    // in a task of its own.
    let frame = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let drawnAt = Number.NEGATIVE_INFINITY;
    const draw = () => {
      timer = undefined;
      frame = requestAnimationFrame(() => {
        frame = 0;
        drawnAt = performance.now();
        flushSync(() => setTick(buf.version));
      });
    };
    const redraw = () => {
      if (frame || timer) return;
      const wait = drawnAt + DRAW_EVERY - performance.now();
      if (wait > 0) timer = setTimeout(draw, wait);
      else draw();
    };
    // The emptied buffer is drawn too (a filter with no lines would go on showing the old ones).
    redraw();
    const filters: Record<string, string> = {};
    if (job) filters[source.jobParam] = job;
    if (job && execution !== "") filters[source.executionParam] = execution;
    // Backfill from the NDJSON download, a streamed fetch (far cheaper for a browser than one
    // SSE event per line): the run's last TAIL lines first, so a long log is readable at once,
    // then the lines before them behind the live stream. A linked line may be anywhere: then
    // the whole run is read first.
    const ctrl = new AbortController();
    let stop = () => {};
    const read = async (params: Record<string, string>, onLine: (l: LogLine) => void) => {
      const res = await fetch(`${apiBase()}${source.path}/logs?${new URLSearchParams({ ...filters, ...source.ndjson, ...params })}`, {
        headers: { Authorization: `Bearer ${getToken()}`, Accept: "application/x-ndjson" },
        signal: ctrl.signal,
      });
      if (!res.ok || !res.body) throw new Error(`log download: ${res.status}`);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let tail = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const parts = (tail + value).split("\n");
        tail = parts.pop() ?? "";
        for (let i = 0; i < parts.length; i++) {
          if (parts[i]) onLine(JSON.parse(parts[i]) as LogLine);
          // A big chunk is parsed in slices, so that the page keeps answering.
          if (i % YIELD_EVERY === YIELD_EVERY - 1) await nextTask();
        }
        redraw();
      }
    };
    void (async () => {
      let since = "";
      let first = "";
      let count = 0;
      if (firstRun)
        try {
          await read({ run: firstRun, ...(lineLink || !source.tail ? {} : { tail: String(TAIL) }) }, (l) => {
            buf.push(l);
            first ||= l.id;
            since = source.eventId(l);
            count++;
          });
        } catch {
          if (ctrl.signal.aborted) return;
          // Otherwise the stream backfills on its own, from where the download stopped.
        }
      if (ctrl.signal.aborted) return;
      setLoaded(true);
      if (firstRun && source.tail && !lineLink && count === TAIL) {
        setEarlier(true);
        const older: LogLine[] = [];
        // Once the page has settled: what the reader sees first (the end, the pipeline, the
        // first click) is not kept waiting by the lines before it.
        new Promise<void>((r) => setTimeout(r, SETTLE_MS))
          .then(() => (ctrl.signal.aborted ? undefined : read({ run: firstRun, before: first }, (l) => older.push(l))))
          .then(async () => {
            // Newest first, a slice per task, so that the page keeps answering.
            for (let end = older.length; end > 0 && !ctrl.signal.aborted; end -= YIELD_EVERY * 5) {
              const added = buf.prepend(older.slice(Math.max(0, end - YIELD_EVERY * 5), end));
              // A reader scrolled up keeps the lines in view.
              const el = scroller.current;
              if (el && pausedRef.current) el.scrollTop += added * ROW;
              redraw();
              await nextTask();
            }
          })
          .catch(() => {})
          .finally(() => !ctrl.signal.aborted && setEarlier(false));
      }
      if (ctrl.signal.aborted) return;
      stop = openStream({
        token: source.token,
        path: `${source.path}/logs/stream`,
        params: { ...filters, ...(follow ? { follow: "true" } : {}), ...(since ? {} : firstRun ? { run: firstRun } : {}) },
        since,
        events: ["line", "run", "end", "lagging"],
        onEvent: (type, data) => {
          if (type === "line" && buf.push(data as LogLine)) redraw();
          // An older run's log is complete at its end: reconnecting would only hear 204s.
          else if (type === "end") {
            const end = data as { run?: string; unstreamed?: number };
            if (end.run && (end.unstreamed ?? 0) > 0 && !rereadRuns.current.has(end.run)) {
              rereadRuns.current.add(end.run);
              setReread((n) => n + 1);
            } else if (!follow) stop();
          }
        },
      });
    })();
    return () => {
      ctrl.abort();
      stop();
      cancelAnimationFrame(frame);
      clearTimeout(timer);
    };
  }, [source.path, firstRun, follow, job, execution, buf, reread]);

  // Fixed-height rows: the visible window is arithmetic, O(1) per frame whatever the length.
  const [scrollTop, setScrollTop] = useState(0);
  const scrollTo = (top: number, now = false) => {
    const el = scroller.current;
    if (!el) return;
    el.scrollTop = top;
    // A jump's rows are drawn for the new place at once, not at the scroll event a frame later;
    // following the end needs no second draw: its rows were drawn for the end (below).
    if (now) setScrollTop(el.scrollTop);
  };
  // What this render draws. The buffer is filled outside React (a download's pieces, the stream)
  // and may hold more lines by the time an effect runs: a scroll is computed on the rows the DOM
  // holds, or it is clamped short of its line (the box is only as tall as the rows drawn).
  const drawn = buf.length;
  const drawnVersion = buf.version;
  const secs = sectionIndex.update(drawn, (i) => buf.at(i), buf);
  // Laid out again when lines arrive or a section folds, not at every scroll: a log of many
  // short stretches (parallel machines interleaving) has nearly as many sections as lines.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the section index is updated in place; the drawn version says when it changed
  const lay = useMemo(() => layout(secs, folded), [secs, drawnVersion, folded]);
  const toggle = useCallback(
    (key: string) =>
      setFolded((f) => {
        const n = new Set(f);
        if (!n.delete(key)) n.add(key);
        return n;
      }),
    [],
  );

  // biome-ignore lint/correctness/useExhaustiveDependencies: the buffer is mutable: its version says when its lines changed
  const matches = useMemo(() => (q ? buf.search(q) : []), [q, buf, buf.version]);
  const matchSet = useMemo(() => new Set(matches), [matches]);
  const [matchAt, setMatchAt] = useState(0);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const pause = (on: boolean) => {
    setPaused(on);
    setPausedAt(buf.version);
    if (!on) followed.current = -1;
  };
  const newLines = paused ? buf.version - pausedAt : 0;
  // A line to scroll to at the next draw (a search match chosen): jumping stops following.
  const target = useRef(-1);
  const jump = (i: number) => {
    target.current = i;
    if (!paused) pause(true);
    else rerender();
  };
  // A linked line is scrolled to once, when a draw holds it (it may come in a later piece).
  const jumpedTo = useRef("");
  const followed = useRef(-1);
  // One effect scrolls, after each draw, so that what it does is decided in one place and in
  // order: a line jumped to first; while a linked line is awaited, nothing (following the end
  // would leave the reader at the bottom, and jumping early is clamped short of the line); the
  // end otherwise, unless paused, when lines arrive (or on resuming): not at every render, or a
  // reader's own scroll (keys, scrollbar) would be undone at once and a row would move under
  // the pointer between where a click aims and where it lands.
  useLayoutEffect(() => {
    // Lines came after this draw: the redraw they asked for decides.
    if (buf.version !== drawnVersion) return;
    if (lineLink && jumpedTo.current !== lineLink) {
      const [run, id] = lineLink.split("/");
      const i = buf.indexOf(run, id);
      if (i < 0 && !loaded) return;
      jumpedTo.current = lineLink;
      if (i >= 0) target.current = i;
    }
    if (target.current >= 0) {
      const i = target.current;
      const s = sectionOf(secs, i);
      if (s >= 0 && folded.has(secs[s].key)) {
        // Its section is unfolded first; the draw that follows scrolls to it.
        const key = secs[s].key;
        setFolded((f) => {
          const n = new Set(f);
          n.delete(key);
          return n;
        });
        return;
      }
      target.current = -1;
      const r = rowOf(lay, i);
      if (r >= 0) {
        if (!pausedRef.current) pause(true);
        followed.current = drawnVersion;
        scrollTo(r * ROW - HEIGHT / 2, true);
        return;
      }
    }
    if (paused || !drawn || followed.current === drawnVersion) return;
    followed.current = drawnVersion;
    scrollTo(lay.rows * ROW);
  });

  // The download goes through a plain link, straight to disk: a logs stream token of this
  // stack (iso_logs of this ISO) opens its GET …/logs (a link cannot send Authorization). It is
  // the run shown when the view shows one run alone, every run otherwise.
  const download = async () => {
    setErr("");
    try {
      const t = await call(api.POST("/v1/stream-tokens", { body: source.token }));
      const q = new URLSearchParams();
      if (!follow && runId) q.set("run", runId);
      if (job) q.set(source.jobParam, job);
      if (job && execution !== "") q.set(source.executionParam, execution);
      q.set("stream_token", t.token);
      const a = document.createElement("a");
      a.href = `${apiBase()}${source.path}/logs?${q}`;
      a.download = source.file;
      a.click();
    } catch (e) {
      setErr(`The download failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  };

  // When the effect above is to follow new lines to the end, the rows drawn are the end's, so
  // that the scroll draws nothing again; otherwise (no new lines, paused, a linked line
  // awaited) those where the reader is.
  const toEnd = !paused && drawn > 0 && followed.current !== drawnVersion && !(lineLink && jumpedTo.current !== lineLink);
  const top = toEnd ? Math.max(0, lay.rows * ROW - HEIGHT) : scrollTop;
  const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
  const last = Math.min(lay.rows, Math.ceil((top + HEIGHT) / ROW) + OVERSCAN);
  return (
    <div className="log">
      <div className="log-tools" role="toolbar" aria-label="Log">
        <label>
          {source.jobLabel}
          <select
            value={execution === "" ? job : `${job}/${execution}`}
            onChange={(e) => {
              const [j, x] = e.target.value.split("/");
              setJob(j);
              setExecution(x ?? "");
            }}
          >
            <option value="">all</option>
            {jobs.map((j) => [
              <option key={j.job} value={j.job}>
                {j.job}
              </option>,
              ...(j.executions.length > 1
                ? j.executions.map((x) => (
                    <option key={`${j.job}/${x}`} value={`${j.job}/${x}`}>
                      {machineLabel(j.job, x)}
                    </option>
                  ))
                : []),
            ])}
          </select>
        </label>
        <label>
          Search
          <input
            type="search"
            value={q}
            onChange={(e) => {
              setQ(e.target.value);
              setMatchAt(0);
            }}
          />
        </label>
        {q && (
          <span className="small">
            {matches.length} found{" "}
            {matches.length > 0 && (
              <button
                type="button"
                onClick={() => {
                  const n = (matchAt + 1) % matches.length;
                  setMatchAt(n);
                  jump(matches[n]);
                }}
              >
                Next match
              </button>
            )}
          </span>
        )}
        <button type="button" aria-pressed={paused} onClick={() => pause(!paused)}>
          {paused ? "Resume" : "Pause"}
        </button>
        {paused && newLines > 0 && (
          <button type="button" className="badge-button" onClick={() => pause(false)}>
            {newLines} new lines
          </button>
        )}
        <button type="button" onClick={() => void download()}>
          Download
        </button>
        <span className="small muted" aria-live="polite">
          {buf.length} lines{earlier ? " (reading earlier lines…)" : ""}
          {buf.dropped ? ` (${buf.dropped} oldest dropped; download for all)` : ""}
        </span>
      </div>
      {err && (
        <p role="alert" className="problem">
          {err}
        </p>
      )}
      <div
        className="log-lines"
        ref={scroller}
        role="region"
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take the keyboard focus to scroll by keys
        tabIndex={0}
        aria-label="Log lines"
        data-testid="log-lines"
        onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}
        onWheel={(e) => {
          if (e.deltaY < 0 && !paused) pause(true);
        }}
      >
        <div style={{ height: lay.rows * ROW, position: "relative" }}>
          {Array.from({ length: Math.max(0, last - first) }, (_, k) => {
            const row = first + k;
            const at = rowAt(lay, row);
            if (!at) return null;
            const sec = secs[at.section];
            if (at.line < 0) {
              const head = buf.at(sec.start);
              return (
                <SectionRow
                  key={`h${head.run}/${head.id}`}
                  row={row}
                  sectionKey={sec.key}
                  text={headerText(sec, stepNames)}
                  open={!folded.has(sec.key)}
                  run={sec.runStart ? head.run : ""}
                  onToggle={toggle}
                />
              );
            }
            const index = at.line;
            const l = buf.at(index);
            if (!l) return null;
            const lineKey = `${l.run}/${l.id}`;
            return (
              <LineRow
                key={lineKey}
                line={l}
                index={index}
                row={row}
                match={matchSet.has(index)}
                linked={lineLink === lineKey}
                runStart={!sec.key && sec.runStart && index === sec.start}
                page={source.page}
              />
            );
          })}
        </div>
      </div>
    </div>
  );
});

// The rows are memoized on what they show: the page around the log re-renders every second
// (its clock), and a busy log draws often, but a row is drawn again only when it changed. They
// are keyed by the line (its run and id), which stays the same when earlier lines are put
// before it or the oldest are dropped, so a row moves rather than being drawn anew.

/** SectionRow is a section's header row; the run's separator is drawn on a run's first row. */
const SectionRow = memo(function SectionRow({
  row,
  sectionKey,
  text,
  open,
  run,
  onToggle,
}: {
  row: number;
  sectionKey: string;
  text: string;
  open: boolean;
  /** The run this header starts, "" when it starts none. */
  run: string;
  onToggle: (key: string) => void;
}) {
  return (
    <div
      className={`log-step${run ? " run-start" : ""}`}
      title={run ? `run ${run}` : undefined}
      style={{ transform: `translateY(${row * ROW}px)`, height: ROW }}
      data-section={sectionKey}
    >
      <button type="button" aria-expanded={open} onClick={() => onToggle(sectionKey)}>
        <span aria-hidden="true">{open ? "▾" : "▸"}</span> {text}
      </button>
    </div>
  );
});

/** LineRow is one line: its link (its number), its time, its machine and its text. */
const LineRow = memo(function LineRow({
  line: l,
  index,
  row,
  match,
  linked,
  runStart,
  page,
}: {
  line: LogLine;
  index: number;
  row: number;
  match: boolean;
  linked: boolean;
  runStart: boolean;
  page: string;
}) {
  return (
    <div
      className={`line fd-${l.fd}${match ? " match" : ""}${linked ? " linked" : ""}${runStart ? " run-start" : ""}`}
      title={runStart ? `run ${l.run}` : undefined}
      style={{ transform: `translateY(${row * ROW}px)`, height: ROW }}
      data-job={l.job}
    >
      <a className="ln" href={`#${page}?run=${l.run}&line=${l.run}/${l.id}`} aria-label={`Link to line ${index + 1}`} tabIndex={-1}>
        {index + 1}
      </a>
      <time className="lts" dateTime={l.at}>
        {lineTime(l.at)}
      </time>
      {l.job && (
        <span className="lj">
          {l.job}
          {l.execution != null ? `#${l.execution}` : ""}
        </span>
      )}
      <LineText text={l.text} />
    </div>
  );
});
