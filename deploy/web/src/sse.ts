// Server-Sent Events through stream tokens: each connection opens with a short-lived token
// minted by POST /v1/stream-tokens, as the API asks of browsers' streams (README: an API token
// never goes in a URL). When the stream drops (network, the server's end, a `lagging` end), it is
// reopened with a fresh token after the server's retry: delay and resumes after the last event
// seen (?last_event_id=); a refused connection (an expired token, a 204) is retried with a
// backoff. `online` reports the connection state, also when the browser reports the network
// gone or back.
//
// The stream is read with fetch, not EventSource: an EventSource hands over all the events of
// a network read in one task (a log's burst of 1 000 lines was one task of 50–230 ms); here
// they are handed over in slices of about SLICE_MS, the page's other work going between them.
import { api, apiBase, call, type Schemas } from "./api/client";

export interface StreamOptions {
  /** What the stream token is minted for: the events, a stack's logs or an ISO's. */
  token: Schemas["StreamTokenRequest"];
  path: string;
  params?: Record<string, string>;
  /** The event names handed to onEvent. */
  events: string[];
  /** The id of the last event the caller already has: the stream resumes after it. */
  since?: string;
  onEvent: (type: string, data: unknown, id: string) => void;
  onOnline?: (online: boolean) => void;
}

/** How long events are handed over before the page gets a turn, in ms. */
const SLICE_MS = 8;

/** nextTask resolves in a later task: what a slice of work yields to. */
export const nextTask = () => new Promise<void>((r) => setTimeout(r));

export function openStream(o: StreamOptions): () => void {
  // The open connection's (or the one being opened's) abort; null between connections.
  let conn: AbortController | null = null;
  let last = o.since ?? "";
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let delay = 500;
  // The delay before reconnecting a dropped stream: the server's retry: field (3 s) once read.
  let reconnect = 3000;
  let connecting = false;

  // backOff reconnects after a delay that doubles up to 10 s; a successful open resets it.
  const backOff = () => {
    delay = Math.min(delay * 2, 10000);
    retry = setTimeout(connect, delay);
  };

  const connect = async () => {
    if (stopped) return;
    let token: string;
    connecting = true;
    try {
      const t = await call(api.POST("/v1/stream-tokens", { body: o.token }));
      token = t.token;
    } catch {
      connecting = false;
      o.onOnline?.(false);
      backOff();
      return;
    }
    connecting = false;
    if (stopped) return;
    const q = new URLSearchParams({ ...o.params, stream_token: token });
    if (last) q.set("last_event_id", last);
    const c = new AbortController();
    conn = c;
    let body: NonNullable<Response["body"]>;
    try {
      const res = await fetch(`${apiBase()}${o.path}?${q}`, {
        headers: { Accept: "text/event-stream" },
        cache: "no-store",
        signal: c.signal,
      });
      // What an EventSource refuses (and would not retry): any answer but an event stream.
      if (res.status !== 200 || !res.body || !res.headers.get("Content-Type")?.startsWith("text/event-stream")) {
        void res.body?.cancel();
        throw new Error(`event stream: ${res.status}`);
      }
      body = res.body;
    } catch {
      if (c.signal.aborted) return;
      conn = null;
      o.onOnline?.(false);
      backOff();
      return;
    }
    delay = 500;
    o.onOnline?.(true);
    try {
      await read(body, c.signal);
    } catch {
      // A dropped connection: reconnected below, as one the server ended.
    }
    if (c.signal.aborted) return;
    conn = null;
    o.onOnline?.(false);
    retry = setTimeout(connect, reconnect);
  };

  // read parses the event stream (the standard framing: field lines, a blank line ends an
  // event) and hands each event of o.events to o.onEvent, a slice at a time.
  const read = async (body: NonNullable<Response["body"]>, signal: AbortSignal) => {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let rest = "";
    let type = "";
    let data: string[] = [];
    let id = last;
    let slice = performance.now();
    for (;;) {
      const { value, done } = await reader.read();
      if (done || signal.aborted) return;
      // A line ends at CR, LF or CRLF; a CR last in a chunk may be the start of a CRLF.
      const lines = (rest + value).split(/\r\n|\r(?!$)|\n/);
      rest = lines.pop() ?? "";
      for (const line of lines) {
        if (line === "") {
          // The end of an event: its id is the stream's last even when it has no data.
          if (id) last = id;
          const name = type || "message";
          const raw = data.join("\n");
          const had = data.length > 0;
          type = "";
          data = [];
          if (!had || !o.events.includes(name)) continue;
          let parsed: unknown = raw;
          try {
            parsed = JSON.parse(raw);
          } catch {
            /* not JSON: passed as is */
          }
          const eventId = last;
          // A lagging end names where to resume: the last event the server sent in time.
          if (name === "lagging" && parsed && typeof parsed === "object" && "id" in parsed) last = id = String(parsed.id);
          o.onEvent(name, parsed, eventId);
          // onEvent may have closed the stream: nothing more is handed over.
          if (signal.aborted) return;
          if (performance.now() - slice > SLICE_MS) {
            await nextTask();
            if (signal.aborted) return;
            slice = performance.now();
          }
          continue;
        }
        if (line.startsWith(":")) continue; // a comment: the server's heartbeat
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let v = colon < 0 ? "" : line.slice(colon + 1);
        if (v.startsWith(" ")) v = v.slice(1);
        if (field === "event") type = v;
        else if (field === "data") data.push(v);
        else if (field === "id" && !v.includes("\0")) id = v;
        else if (field === "retry" && /^\d+$/.test(v)) reconnect = Number(v);
      }
    }
  };

  // The browser knows before the stream does when the network goes (a laptop's Wi-Fi): say
  // so at once, and reconnect at once when it is back rather than after the backoff.
  const offline = () => {
    conn?.abort();
    conn = null;
    clearTimeout(retry);
    o.onOnline?.(false);
  };
  const online = () => {
    if (conn || connecting || stopped) return;
    clearTimeout(retry);
    delay = 500;
    void connect();
  };
  window.addEventListener("offline", offline);
  window.addEventListener("online", online);
  void connect();
  return () => {
    stopped = true;
    clearTimeout(retry);
    window.removeEventListener("offline", offline);
    window.removeEventListener("online", online);
    conn?.abort();
  };
}
