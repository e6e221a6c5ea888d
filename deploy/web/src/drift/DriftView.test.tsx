// The Drift section as a user meets it: a viewer reads the findings without any button; a
// writer's Accept asks for a reason and sends it with the finding's version as If-Match.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { configure, type Stack } from "../api/client";
import { DriftSection } from "./DriftView";
import type { DriftFinding } from "./drift";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const f: DriftFinding = {
  id: "11111111-1111-1111-1111-111111111111",
  job: "app",
  execution: 1,
  path: "memory",
  kind: "changed",
  expected: "2048",
  actual: "4096",
  since: "2026-12-04T10:00:00Z",
  changed_by: "root@pam",
  changed_at: "2026-12-04T09:58:00Z",
  last_seen_at: "2026-12-04T10:05:00Z",
  accepted: null,
  version: 3,
};

function stack(allowed: string[], drift: Partial<Stack["drift"]> = {}): Stack {
  return {
    id: "22222222-2222-2222-2222-222222222222",
    state: "deployed",
    current_run: null,
    allowed_actions: allowed,
    drift: { drifted: true, checked_at: "2026-12-04T10:05:00Z", findings: [f], check_error: null, failed_at: null, ...drift },
  } as unknown as Stack;
}

function show(s: Stack, role: string) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  qc.setQueryData(["stack", s.id], s);
  return render(
    <QueryClientProvider client={qc}>
      <DriftSection stack={s} role={role} />
    </QueryClientProvider>,
  );
}

describe("DriftSection", () => {
  it("shows a viewer the finding, who changed it and the last check, with no button", () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => new Response(JSON.stringify(stack([])), { status: 200, headers: { "Content-Type": "application/json" } })),
    );
    configure("http://horizon.test");
    show(stack([]), "viewer");
    const row = document.querySelector('[data-finding="app #1.memory"]')!;
    expect(row.textContent).toContain("2048 → 4096");
    expect(row.textContent).toContain("root@pam");
    expect(screen.getByTestId("drift-checked").textContent).toContain("Last checked");
    expect(screen.queryByRole("button")).toBeNull();
  });

  it("says a check never ran and shows a failed check's reason", () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => new Response("{}", { status: 200 })),
    );
    configure("http://horizon.test");
    show(
      stack([], {
        checked_at: null,
        findings: [],
        drifted: false,
        check_error: "pve1: connection refused",
        failed_at: "2026-12-04T10:06:00Z",
      }),
      "viewer",
    );
    expect(screen.getByTestId("drift-checked").textContent).toContain("Never checked");
    expect(screen.getByTestId("drift-check-error").textContent).toContain("pve1: connection refused");
  });

  it("accepts a finding with a reason and the finding's version as If-Match", async () => {
    const calls: Request[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (r: Request) => {
        calls.push(r.clone());
        return new Response(JSON.stringify(r.method === "POST" ? f : stack(["run_again"])), {
          status: 200,
          headers: { "Content-Type": "application/json" },
        });
      }),
    );
    configure("http://horizon.test");
    show(stack(["run_again"]), "member");
    expect(screen.getByRole("button", { name: "Check now" })).toBeTruthy();
    expect(screen.getByRole("button", { name: "Re-apply this job" })).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Accept" }));
    const submit = screen.getByRole("button", { name: "Accept" }) as HTMLButtonElement;
    expect(submit.disabled).toBe(true);
    fireEvent.change(screen.getByLabelText(/Why is this change accepted/), { target: { value: "  resized on purpose " } });
    await act(async () => {
      fireEvent.click(submit);
    });
    const post = calls.find((r) => r.method === "POST")!;
    expect(new URL(post.url).pathname).toBe(`/v1/stacks/${stack([]).id}/drift/findings/${f.id}/accept`);
    expect(post.headers.get("If-Match")).toBe('"3"');
    expect(await post.json()).toEqual({ reason: "resized on purpose" });
  });
});
