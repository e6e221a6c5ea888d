// The log's sections folded and unfolded from their header rows, and a linked line inside a
// folded section unfolding it (#29 item 13). The run's NDJSON download is answered by a
// stand-in fetch; the live stream is left closed (an older run's log is the download alone),
// the browser journeys (e2e/run.mjs) cover the stream.
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LogView, stackLog } from "./LogView";

vi.mock("../sse", () => ({ openStream: () => () => {} }));

const lines = [
  { id: "1-0", run: "r1", step: "s-db", job: "db", execution: 0, fd: "stdout", at: "2026-01-01T10:00:00Z", text: "db one" },
  { id: "1-1", run: "r1", step: "s-db", job: "db", execution: 0, fd: "stdout", at: "2026-01-01T10:00:01Z", text: "db two" },
  { id: "1-2", run: "r1", step: "s-app", job: "app", execution: 0, fd: "stdout", at: "2026-01-01T10:00:02Z", text: "app one" },
  { id: "1-3", run: "r1", step: "s-app", job: "app", execution: 0, fd: "stdout", at: "2026-01-01T10:00:03Z", text: "app two" },
  { id: "1-4", run: "r1", step: "s-app", job: "app", execution: 0, fd: "stderr", at: "2026-01-01T10:00:04Z", text: "app three" },
];

beforeEach(() => {
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: RequestInfo | URL) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (url.includes("/v1/stacks/st1/logs?")) return new Response(lines.map((l) => JSON.stringify(l)).join("\n") + "\n", { status: 200 });
      return new Response(JSON.stringify({ title: "not here", status: 404 }), { status: 404, headers: { "Content-Type": "application/problem+json" } });
    }),
  );
});
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const view = (lineLink?: string) => (
  <LogView source={stackLog("st1")} runId="r1" follow={false} jobs={[]} lineLink={lineLink} stepNames={{ "s-db": "apply" }} />
);
const shown = () => [...document.querySelectorAll(".log-lines .line .lt")].map((l) => l.textContent);

describe("LogView sections", () => {
  it("folds and unfolds a step's lines from its header button", async () => {
    render(view());
    const db = await screen.findByRole("button", { name: "apply · db #0 · 2 lines" });
    await waitFor(() => expect(shown()).toEqual(["db one", "db two", "app one", "app two", "app three"]));
    expect(db.getAttribute("aria-expanded")).toBe("true");
    expect(screen.getByRole("button", { name: "app #0 · 3 lines" }).getAttribute("aria-expanded")).toBe("true");
    fireEvent.click(db);
    expect(db.getAttribute("aria-expanded")).toBe("false");
    expect(shown()).toEqual(["app one", "app two", "app three"]);
    expect(document.querySelectorAll(".log-lines .log-step")).toHaveLength(2); // the folded one's header stays
    fireEvent.click(db);
    expect(shown()).toEqual(["db one", "db two", "app one", "app two", "app three"]);
  });

  it("unfolds the section of a linked line", async () => {
    const { rerender } = render(view());
    const app = await screen.findByRole("button", { name: "app #0 · 3 lines" });
    await waitFor(() => expect(shown()).toHaveLength(5));
    fireEvent.click(app);
    expect(shown()).toEqual(["db one", "db two"]);
    await act(async () => rerender(view("r1/1-3")));
    await waitFor(() => expect(document.querySelector(".log-lines .line.linked .lt")?.textContent).toBe("app two"));
    expect(app.getAttribute("aria-expanded")).toBe("true");
  });
});
