// The live log of a stack: backfilled and followed into the next runs by one SSE stream
// (?follow=true), filtered by job and execution on the server (a new filter reopens the stream),
// held in a bounded LogBuffer and drawn virtualised (fixed row height), so 100 000 lines scroll
// smoothly. Pause stops following and counts the new lines; search runs over the loaded lines;
// each line has a link (?line=<run>/<id>).
import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useMemo, useRef, useState } from "react";
import { api, apiBase, call, type LogLine } from "../api/client";
import { openStream } from "../sse";
import { LogBuffer } from "./buffer";

const ROW = 18;

export function LogView({ stackId, jobs, lineLink }: { stackId: string; jobs: { job: string; executions: number }[]; lineLink?: string }) {
  const [job, setJob] = useState("");
  const [execution, setExecution] = useState("");
  const [paused, setPaused] = useState(false);
  const [q, setQ] = useState("");
  const [, setTick] = useState(0);
  const [newLines, setNewLines] = useState(0);
  const [err, setErr] = useState("");
  const buf = useMemo(() => new LogBuffer(), []);
  const pausedRef = useRef(false);
  pausedRef.current = paused;
  const scroller = useRef<HTMLDivElement>(null);

  useEffect(() => {
    buf.clear();
    setNewLines(0);
    let frame = 0;
    const redraw = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setTick(buf.version);
      });
    };
    const params: Record<string, string> = { follow: "true" };
    if (job) params.job = job;
    if (job && execution !== "") params.execution = execution;
    const stop = openStream({
      purpose: "logs",
      stackId,
      path: `/v1/stacks/${stackId}/logs/stream`,
      params,
      events: ["line", "run", "end", "lagging"],
      onEvent: (type, data) => {
        if (type !== "line") return;
        if (buf.push(data as LogLine)) {
          if (pausedRef.current) setNewLines((n) => n + 1);
          redraw();
        }
      },
    });
    return () => {
      stop();
      cancelAnimationFrame(frame);
    };
  }, [stackId, job, execution, buf]);

  const v = useVirtualizer({ count: buf.length, getScrollElement: () => scroller.current, estimateSize: () => ROW, overscan: 20 });

  // Follow the end unless paused.
  useEffect(() => {
    if (!paused && buf.length) v.scrollToIndex(buf.length - 1, { align: "end" });
  });

  const matches = useMemo(() => (q ? buf.search(q) : []), [q, buf, buf.version]); // eslint-disable-line react-hooks/exhaustive-deps
  const matchSet = useMemo(() => new Set(matches), [matches]);
  const [matchAt, setMatchAt] = useState(0);
  const jump = (i: number) => {
    setPaused(true);
    v.scrollToIndex(i, { align: "center" });
  };
  // A linked line: scroll to it once it is loaded.
  useEffect(() => {
    if (!lineLink) return;
    const [run, id] = lineLink.split("/");
    const i = buf.indexOf(run, id);
    if (i >= 0) jump(i);
  }, [lineLink, buf.length > 0]); // eslint-disable-line react-hooks/exhaustive-deps

  // The download goes through a plain link, straight to disk: a logs stream token of this
  // stack opens GET /v1/stacks/{id}/logs (a link cannot send Authorization).
  const download = async () => {
    setErr("");
    try {
      const t = await call(api.POST("/v1/stream-tokens", { body: { purpose: "logs", stack_id: stackId } }));
      const q = new URLSearchParams();
      if (job) q.set("job", job);
      if (job && execution !== "") q.set("execution", execution);
      q.set("stream_token", t.token);
      const a = document.createElement("a");
      a.href = `${apiBase()}/v1/stacks/${stackId}/logs?${q}`;
      a.download = `stack-${stackId}.log`;
      a.click();
    } catch (e) {
      setErr(`The download failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  };

  const execCount = jobs.find((j) => j.job === job)?.executions ?? 0;
  return (
    <div className="log">
      <div className="log-tools" role="toolbar" aria-label="Log">
        <label>
          Job
          <select value={job} onChange={(e) => { setJob(e.target.value); setExecution(""); }}>
            <option value="">all</option>
            {jobs.map((j) => <option key={j.job}>{j.job}</option>)}
          </select>
        </label>
        {job && execCount > 1 && (
          <label>
            Execution
            <select value={execution} onChange={(e) => setExecution(e.target.value)}>
              <option value="">all</option>
              {Array.from({ length: execCount }, (_, i) => <option key={i} value={i}>#{i + 1}</option>)}
            </select>
          </label>
        )}
        <label>
          Search
          <input type="search" value={q} onChange={(e) => { setQ(e.target.value); setMatchAt(0); }} />
        </label>
        {q && (
          <span className="small">
            {matches.length} found{" "}
            {matches.length > 0 && (
              <button type="button" onClick={() => { const n = (matchAt + 1) % matches.length; setMatchAt(n); jump(matches[n]); }}>
                Next match
              </button>
            )}
          </span>
        )}
        <button type="button" aria-pressed={paused} onClick={() => { setPaused(!paused); setNewLines(0); }}>
          {paused ? "Resume" : "Pause"}
        </button>
        {paused && newLines > 0 && (
          <button type="button" className="badge-button" onClick={() => { setPaused(false); setNewLines(0); }}>
            {newLines} new lines
          </button>
        )}
        <button type="button" onClick={() => void download()}>Download</button>
        <span className="small muted" aria-live="polite">{buf.length} lines{buf.dropped ? ` (${buf.dropped} oldest dropped; download for all)` : ""}</span>
      </div>
      {err && <p role="alert" className="problem">{err}</p>}
      <div className="log-lines" ref={scroller} tabIndex={0} aria-label="Log lines" data-testid="log-lines" onWheel={(e) => { if (e.deltaY < 0 && !paused) setPaused(true); }}>
        <div style={{ height: v.getTotalSize(), position: "relative" }}>
          {v.getVirtualItems().map((it) => {
            const l = buf.at(it.index);
            if (!l) return null;
            return (
              <div
                key={it.key}
                className={`line fd-${l.fd}${matchSet.has(it.index) ? " match" : ""}${lineLink === `${l.run}/${l.id}` ? " linked" : ""}`}
                style={{ transform: `translateY(${it.start}px)`, height: ROW }}
                data-job={l.job}
              >
                <a className="ln" href={`#/stacks/${stackId}?line=${l.run}/${l.id}`} aria-label={`Link to line ${it.index + 1}`} tabIndex={-1}>
                  {it.index + 1}
                </a>
                {l.job && <span className="lj">{l.job}{l.execution != null ? `#${l.execution + 1}` : ""}</span>}
                <span className="lt">{l.text}</span>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
