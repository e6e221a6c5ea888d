// Server-Sent Events through stream tokens: browsers' EventSource cannot send Authorization, so
// each connection opens with a short-lived token minted by POST /v1/stream-tokens. When the
// stream drops (network, token expiry, a `lagging` end), it is reopened with a fresh token and
// resumes after the last event seen (?last_event_id=); `online` reports the connection state,
// also when the browser reports the network gone or back.
import { api, apiBase, call, type Schemas } from "./api/client";

export interface StreamOptions {
  /** What the stream token is minted for: the events, a stack's logs or an ISO's. */
  token: Schemas["StreamTokenRequest"];
  path: string;
  params?: Record<string, string>;
  /** Event names to listen to besides `message`. */
  events: string[];
  /** The id of the last event the caller already has: the stream resumes after it. */
  since?: string;
  onEvent: (type: string, data: unknown, id: string) => void;
  onOnline?: (online: boolean) => void;
}

export function openStream(o: StreamOptions): () => void {
  let es: EventSource | null = null;
  let last = o.since ?? "";
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let delay = 500;
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
    es = new EventSource(`${apiBase()}${o.path}?${q}`);
    es.onopen = () => {
      delay = 500;
      o.onOnline?.(true);
    };
    for (const name of o.events)
      es.addEventListener(name, (ev) => {
        const m = ev as MessageEvent;
        if (m.lastEventId) last = m.lastEventId;
        let data: unknown = m.data;
        try {
          data = JSON.parse(m.data);
        } catch {
          /* not JSON: passed as is */
        }
        if (name === "lagging" && data && typeof data === "object" && "id" in data) last = String((data as { id: string }).id);
        o.onEvent(name, data, m.lastEventId);
      });
    es.onerror = () => {
      // EventSource retries a dropped connection itself (with Last-Event-ID), but not one
      // refused (an expired token): that needs a new token.
      if (es && es.readyState === EventSource.CLOSED) {
        es = null;
        o.onOnline?.(false);
        backOff();
      } else o.onOnline?.(false);
    };
  };
  // The browser knows before the stream does when the network goes (a laptop's Wi-Fi): say
  // so at once, and reconnect at once when it is back rather than after the backoff.
  const offline = () => {
    es?.close();
    es = null;
    clearTimeout(retry);
    o.onOnline?.(false);
  };
  const online = () => {
    if (es || connecting || stopped) return;
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
    es?.close();
  };
}
