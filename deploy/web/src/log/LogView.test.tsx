// The log view (#29): opened on a line's link, the line is jumped to once it is drawn, whatever
// the pieces the run's download arrives in; each step's lines fold and unfold under a header
// row, and a linked line inside a folded section unfolds it; a run's end that says lines were
// never streamed (Redis was down) has the log read again. The run's NDJSON download is answered
// by a stand-in fetch whose body the test feeds; the live stream is a stand-in the test sends
// events on; the browser journeys (e2e/*.spec.ts) cover the real stream.
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { Profiler } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LogView, stackLog } from "./LogView";
import type { LogLine } from "../api/client";

// The live streams the view opens, for a test to send events on.
const sse = vi.hoisted(() => ({ opened: [] as { onEvent: (type: string, data: unknown) => void }[] }));
vi.mock("../sse", async (original) => ({
  ...(await original<typeof import("../sse")>()),
  openStream: (o: { onEvent: (type: string, data: unknown) => void }) => {
    sse.opened.push(o);
    return () => {};
  },
}));

const line = (n: number, step = "s-app", job = "app"): LogLine => ({
  id: `1-${n}`,
  run: "r1",
  step,
  job,
  execution: 0,
  fd: "stdout",
  at: "2026-01-01T10:00:00Z",
  text: `line ${n}`,
});
const ndjson = (ls: LogLine[]) => new TextEncoder().encode(`${ls.map((l) => JSON.stringify(l)).join("\n")}\n`);

// The download's body, fed by the test a piece at a time.
let feed: ReadableStreamDefaultController<Uint8Array>;
beforeEach(() => {
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: RequestInfo | URL) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (url.includes("/v1/stacks/st1/logs?"))
        return new Response(
          new ReadableStream<Uint8Array>({
            start: (c) => {
              feed = c;
            },
          }),
          { status: 200 },
        );
      return new Response(JSON.stringify({ title: "not here", status: 404 }), {
        status: 404,
        headers: { "Content-Type": "application/problem+json" },
      });
    }),
  );
});
afterEach(() => {
  sse.opened.length = 0;
  cleanup();
  vi.unstubAllGlobals();
});

/**
 * layout gives the scroller what a browser's layout does and happy-dom's does not: scrollTop
 * is clamped to the drawn content's height less the box's (420 px), and a scroll event follows.
 */
function layout(el: HTMLElement) {
  let top = 0;
  Object.defineProperty(el, "scrollTop", {
    get: () => top,
    set: (v: number) => {
      const content = parseFloat((el.firstElementChild as HTMLElement | null)?.style.height ?? "0") || 0;
      top = Math.max(0, Math.min(v, content - 420));
      queueMicrotask(() => el.dispatchEvent(new Event("scroll")));
    },
  });
}

const linked = () => document.querySelector(".log-lines .line.linked .lt")?.textContent;

describe("LogView, opened on a line's link", () => {
  it("jumps to the line once it is drawn, also when it arrives between a draw and the jump", async () => {
    const lines = Array.from({ length: 500 }, (_, n) => line(n));
    let sent = false;
    // The second piece of the download arrives right after the first piece's lines are drawn,
    // before React's effects of that draw run: what a loaded browser does on a slow network.
    const onCommit = () => {
      if (sent || !document.querySelector(".log-lines .line")) return;
      sent = true;
      feed.enqueue(ndjson(lines.slice(100)));
      feed.close();
    };
    const { container } = render(
      <Profiler id="log" onRender={onCommit}>
        <LogView source={stackLog("st1")} runId="r1" follow={false} jobs={[]} lineLink="r1/1-450" />
      </Profiler>,
    );
    layout(container.querySelector(".log-lines") as HTMLElement);
    await waitFor(() => expect(fetch).toHaveBeenCalled());
    feed.enqueue(ndjson(lines.slice(0, 100)));
    // A deadline to wait within, not a timed assertion: the download's pieces are slow to go
    // through happy-dom's streams on a loaded machine.
    await waitFor(() => expect(linked()).toBe("line 450"), { timeout: 30_000 });
    // Scrolled to it: the line's row is within the box, not only drawn in the overscan.
    const el = container.querySelector(".log-lines") as HTMLElement;
    const row = Number(
      /translateY\((\d+)px\)/.exec((document.querySelector(".log-lines .line.linked") as HTMLElement).style.transform)?.[1],
    );
    expect(row).toBeGreaterThanOrEqual(el.scrollTop);
    expect(row).toBeLessThan(el.scrollTop + 420);
  }, 60_000);
});

describe("LogView sections", () => {
  const lines = [line(0, "s-db", "db"), line(1, "s-db", "db"), line(2), line(3), line(4)];
  const view = (lineLink?: string) => (
    <LogView source={stackLog("st1")} runId="r1" follow={false} jobs={[]} lineLink={lineLink} stepNames={{ "s-db": "apply" }} />
  );
  const shown = () => [...document.querySelectorAll(".log-lines .line .lt")].map((l) => l.textContent);
  const load = async () => {
    await waitFor(() => expect(fetch).toHaveBeenCalled());
    feed.enqueue(ndjson(lines));
    feed.close();
    await waitFor(() => expect(shown()).toHaveLength(5), { timeout: 30_000 });
  };

  it("folds and unfolds a step's lines from its header button", async () => {
    render(view());
    await load();
    const db = screen.getByRole("button", { name: "apply · db #0 · 2 lines" });
    expect(db.getAttribute("aria-expanded")).toBe("true");
    expect(screen.getByRole("button", { name: "app #0 · 3 lines" }).getAttribute("aria-expanded")).toBe("true");
    fireEvent.click(db);
    expect(db.getAttribute("aria-expanded")).toBe("false");
    expect(shown()).toEqual(["line 2", "line 3", "line 4"]);
    expect(document.querySelectorAll(".log-lines .log-step")).toHaveLength(2); // the folded one's header stays
    // The rows are packed: app's header is drawn right under db's folded one.
    const app = document.querySelector('.log-step[data-section="r1/s-app"]') as HTMLElement;
    expect(app.style.transform).toBe("translateY(18px)");
    fireEvent.click(db);
    expect(shown()).toEqual(["line 0", "line 1", "line 2", "line 3", "line 4"]);
  }, 60_000);

  it("unfolds the section of a linked line", async () => {
    const { rerender } = render(view());
    await load();
    const app = screen.getByRole("button", { name: "app #0 · 3 lines" });
    fireEvent.click(app);
    expect(shown()).toEqual(["line 0", "line 1"]);
    await act(async () => rerender(view("r1/1-3")));
    await waitFor(() => expect(linked()).toBe("line 3"));
    expect(app.getAttribute("aria-expanded")).toBe("true");
  }, 60_000);
});

describe("LogView, at a run's end", () => {
  const shown = () => [...document.querySelectorAll(".log-lines .line .lt")].map((l) => l.textContent);
  const downloads = () => vi.mocked(fetch).mock.calls.filter(([u]) => String(u).includes("/v1/stacks/st1/logs?")).length;

  it("reads the log again, once, when the end says lines were never streamed", async () => {
    render(<LogView source={stackLog("st1")} runId="r1" follow={false} jobs={[]} />);
    await waitFor(() => expect(downloads()).toBe(1));
    feed.enqueue(ndjson([line(0), line(1)]));
    feed.close();
    await waitFor(() => expect(sse.opened).toHaveLength(1), { timeout: 30_000 });
    // Redis was down while lines 2 and 3 were written: they are stored, not streamed.
    act(() => sse.opened[0].onEvent("end", { run: "r1", status: "succeeded", unstreamed: 2 }));
    await waitFor(() => expect(downloads()).toBe(2));
    feed.enqueue(ndjson([line(0), line(1), line(2), line(3)]));
    feed.close();
    await waitFor(() => expect(shown()).toEqual(["line 0", "line 1", "line 2", "line 3"]), { timeout: 30_000 });
    // The stream opened after the second read ends saying the same: it is not read a third time.
    await waitFor(() => expect(sse.opened).toHaveLength(2), { timeout: 30_000 });
    act(() => sse.opened[1].onEvent("end", { run: "r1", status: "succeeded", unstreamed: 2 }));
    await new Promise((r) => setTimeout(r, 50));
    expect(downloads()).toBe(2);
  }, 60_000);
});

describe("LogView rows", () => {
  it("are where the reader scrolled, following or not, when no new line came", async () => {
    const { container } = render(<LogView source={stackLog("st1")} runId="r1" follow={false} jobs={[]} />);
    const el = container.querySelector(".log-lines") as HTMLElement;
    layout(el);
    await waitFor(() => expect(fetch).toHaveBeenCalled());
    feed.enqueue(ndjson(Array.from({ length: 500 }, (_, n) => line(n))));
    feed.close();
    const drawn = () => [...document.querySelectorAll(".log-lines .line .lt")].map((l) => l.textContent);
    await waitFor(() => expect(drawn()).toContain("line 499"), { timeout: 30_000 });
    act(() => {
      el.scrollTop = 0;
    });
    await waitFor(() => expect(drawn()).toContain("line 0"));
  }, 60_000);

  it("keep their element when earlier lines are put before them: a row is keyed by its line", async () => {
    const { container } = render(<LogView source={stackLog("st1")} runId="r1" follow={false} jobs={[]} />);
    layout(container.querySelector(".log-lines") as HTMLElement);
    // The run's last 2 000 lines (the tail read first: a longer log has earlier ones).
    await waitFor(() => expect(fetch).toHaveBeenCalledTimes(1));
    feed.enqueue(ndjson(Array.from({ length: 2000 }, (_, n) => line(n + 100))));
    feed.close();
    const row = (text: string) =>
      [...document.querySelectorAll(".log-lines .line")].find((r) => r.querySelector(".lt")?.textContent === text);
    await waitFor(() => expect(row("line 2099")).toBeDefined(), { timeout: 30_000 });
    const before = row("line 2099");
    expect(before?.querySelector(".ln")?.textContent).toBe("2000");
    // The 100 lines before the tail.
    await waitFor(() => expect(vi.mocked(fetch).mock.calls.some(([u]) => String(u).includes("before=1-100"))).toBe(true), {
      timeout: 30_000,
    });
    feed.enqueue(ndjson(Array.from({ length: 100 }, (_, n) => line(n))));
    feed.close();
    await waitFor(() => expect(row("line 2099")?.querySelector(".ln")?.textContent).toBe("2100"), { timeout: 30_000 });
    expect(row("line 2099")).toBe(before);
  }, 60_000);
});
