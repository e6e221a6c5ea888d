// openStream: the event stream read with fetch, its events handed over in slices (a burst is
// not one long task), and the reconnection of a dropped or refused stream with a fresh token,
// after the last event seen. The token endpoint and the stream are stand-ins the test feeds.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openStream } from "./sse";

let tokens = 0;
vi.mock("./api/client", () => ({
  apiBase: () => "http://api",
  api: { POST: async () => ({ token: `t${++tokens}` }) },
  call: async <T>(p: Promise<T>) => p,
}));

// Each stream request, and the body the test feeds it.
let streams: { url: URL; feed: ReadableStreamDefaultController<Uint8Array> }[] = [];
// The answer to the next stream requests: an event stream unless a status is queued.
let refuse: number[] = [];
beforeEach(() => {
  tokens = 0;
  streams = [];
  refuse = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: string) => {
      const status = refuse.shift();
      if (status) return new Response(null, { status });
      let feed!: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({
        start: (c) => {
          feed = c;
        },
      });
      streams.push({ url: new URL(input), feed });
      return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    }),
  );
});
afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

const send = (i: number, text: string) => streams[i].feed.enqueue(new TextEncoder().encode(text));
const line = (n: number) => `id: r1/1-${n}\nevent: line\ndata: {"id":"1-${n}"}\n\n`;

describe("openStream", () => {
  it("hands over the events it listens to, parsed, with the last id seen", async () => {
    const got: [string, unknown, string][] = [];
    const stop = openStream({ token: { purpose: "events" }, path: "/v1/x", events: ["line", "end"], onEvent: (...e) => got.push(e) });
    await vi.waitFor(() => expect(streams).toHaveLength(1));
    expect(streams[0].url.searchParams.get("stream_token")).toBe("t1");
    // Split anywhere, CRLF or not, a comment and an event not listened to between.
    send(0, "retry: 3000\n\n: ping\n\nid: r1/1-1\r\nevent: li");
    send(0, 'ne\r\ndata: {"id":"1-1"}\r\n\r\nevent: other\ndata: x\n\nevent: end\ndata: not json\n\n');
    await vi.waitFor(() => expect(got).toHaveLength(2));
    expect(got).toEqual([
      ["line", { id: "1-1" }, "r1/1-1"],
      ["end", "not json", "r1/1-1"],
    ]);
    stop();
  });

  it("hands a burst over in slices, the page getting a turn between them", async () => {
    // Each event takes 1 ms of the page's time.
    let clock = 0;
    vi.spyOn(performance, "now").mockImplementation(() => clock);
    let n = 0;
    let seenBetween = -1;
    const stop = openStream({
      token: { purpose: "events" },
      path: "/v1/x",
      events: ["line"],
      onEvent: () => {
        // Something else the page has to do, asked for when the burst starts.
        if (n++ === 0)
          setTimeout(() => {
            seenBetween = n;
          });
        clock += 1;
      },
    });
    await vi.waitFor(() => expect(streams).toHaveLength(1));
    send(0, Array.from({ length: 1000 }, (_, i) => line(i)).join(""));
    await vi.waitFor(() => expect(n).toBe(1000));
    // The other work ran after the first slice (about 8 events of 1 ms), not after the burst.
    expect(seenBetween).toBeGreaterThan(0);
    expect(seenBetween).toBeLessThan(20);
    stop();
  });

  it("reconnects a dropped stream with a fresh token, after the last event seen", async () => {
    const online: boolean[] = [];
    const got: string[] = [];
    const stop = openStream({
      token: { purpose: "events" },
      path: "/v1/x",
      events: ["line", "lagging"],
      since: "r1/1-0",
      onEvent: (_, __, id) => got.push(id),
      onOnline: (on) => online.push(on),
    });
    await vi.waitFor(() => expect(streams).toHaveLength(1));
    expect(streams[0].url.searchParams.get("last_event_id")).toBe("r1/1-0");
    // The server says how long to wait before reconnecting.
    send(0, `retry: 10\n\n${line(1)}${line(2)}`);
    await vi.waitFor(() => expect(got).toEqual(["r1/1-1", "r1/1-2"]));
    streams[0].feed.close();
    await vi.waitFor(() => expect(streams).toHaveLength(2));
    expect(streams[1].url.searchParams.get("stream_token")).toBe("t2");
    expect(streams[1].url.searchParams.get("last_event_id")).toBe("r1/1-2");
    expect(online).toEqual([true, false, true]);
    // A lagging end names where to resume; a dropped connection resumes there.
    send(1, `retry: 10\n\n${line(3)}event: lagging\ndata: {"id":"r1/1-5"}\n\n`);
    await vi.waitFor(() => expect(got).toHaveLength(4));
    streams[1].feed.error(new TypeError("network"));
    await vi.waitFor(() => expect(streams).toHaveLength(3));
    expect(streams[2].url.searchParams.get("last_event_id")).toBe("r1/1-5");
    stop();
  });

  it("retries a refused stream with a fresh token, and stops for good when stopped", async () => {
    refuse = [204];
    const online: boolean[] = [];
    const stop = openStream({
      token: { purpose: "events" },
      path: "/v1/x",
      events: ["line"],
      onEvent: () => {},
      onOnline: (on) => online.push(on),
    });
    // The backoff's first delay is a second.
    await vi.waitFor(() => expect(streams).toHaveLength(1), { timeout: 3000 });
    expect(streams[0].url.searchParams.get("stream_token")).toBe("t2");
    expect(online).toEqual([false, true]);
    stop();
    await new Promise((r) => setTimeout(r, 50));
    expect(streams).toHaveLength(1);
  });

  it("hands nothing over once stopped by an event it handed over", async () => {
    const got: string[] = [];
    const stop: () => void = openStream({
      token: { purpose: "events" },
      path: "/v1/x",
      events: ["line", "end"],
      onEvent: (type) => {
        got.push(type);
        if (type === "end") stop();
      },
    });
    await vi.waitFor(() => expect(streams).toHaveLength(1));
    send(0, `${line(1)}event: end\ndata: {}\n\n${line(2)}`);
    await vi.waitFor(() => expect(got).toContain("end"));
    await new Promise((r) => setTimeout(r, 50));
    expect(got).toEqual(["line", "end"]);
  });
});
