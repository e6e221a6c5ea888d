// The stack's outputs (#29 item 12): their values in one column whatever the names' lengths,
// and "Copied" clearing after a few seconds.
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FLASH_MS, Secret } from "./common";
import { OutputsTable } from "./stack/Outputs";

afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

describe("OutputsTable", () => {
  it("puts every job's values in one column of one table", () => {
    const { container } = render(
      <OutputsTable
        id="s1"
        jobs={[
          ["db", [{ execution: 0, outputs: { ip: "10.0.0.5" } }]],
          ["application_server", [{ execution: 1, outputs: { a_rather_long_output_name: "x", api_key: { secret: true } } }]],
        ]}
      />,
    );
    expect(container.querySelectorAll("table")).toHaveLength(1);
    const rows = [...container.querySelectorAll("tr[data-output]")] as HTMLTableRowElement[];
    expect(rows.map((r) => r.getAttribute("data-output"))).toEqual([
      "db#0.ip",
      "application_server#1.a_rather_long_output_name",
      "application_server#1.api_key",
    ]);
    for (const r of rows) {
      expect(r.cells).toHaveLength(2);
      expect(r.cells[0].tagName).toBe("TH");
      expect(r.cells[1].tagName).toBe("TD");
    }
    expect(screen.getByRole("rowgroup", { name: "Outputs of db" })).toBeTruthy();
    expect(screen.getByRole("button", { name: "Copy api_key" })).toBeTruthy();
  });
});

describe("Secret", () => {
  it("says Copied, and clears it after a few seconds", async () => {
    vi.useFakeTimers();
    const writeText = vi.fn(async (_: string) => {});
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    render(<Secret name="api_key" reveal={async () => ({ value: "hzn_secret" })} />);
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Copy api_key" }));
    });
    expect(writeText).toHaveBeenCalledWith("hzn_secret");
    expect(screen.getByRole("status").textContent).toBe("Copied");
    // A second copy restarts the wait: the note stays its full time after the last copy.
    await act(async () => {
      vi.advanceTimersByTime(FLASH_MS - 500);
      fireEvent.click(screen.getByRole("button", { name: "Copy api_key" }));
    });
    await act(async () => vi.advanceTimersByTime(FLASH_MS - 100));
    expect(screen.getByRole("status").textContent).toBe("Copied");
    await act(async () => vi.advanceTimersByTime(200));
    expect(screen.getByRole("status").textContent).toBe("");
    expect(screen.queryByText("hzn_secret")).toBeNull();
  });
});
