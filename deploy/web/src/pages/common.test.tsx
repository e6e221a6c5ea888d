// The Retry menu's behaviour (#29 item 11) and the counts in words (item 12).
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { Menu, plural, runKindLabel } from "./common";
import { forceRemoved } from "./stack/History";

afterEach(cleanup);

function menu(closeOn = "run-1") {
  return (
    <div>
      <p>outside</p>
      <Menu label="Retry" closeOn={closeOn}>
        {(close) => (
          <button type="button" role="menuitem" onClick={close}>
            Retry failed jobs
          </button>
        )}
      </Menu>
    </div>
  );
}
const details = () => screen.getByText("Retry").closest("details")!;
const open = () => {
  fireEvent.click(screen.getByText("Retry"));
  details().open = true;
  fireEvent(details(), new Event("toggle"));
  expect(details().open).toBe(true);
};

describe("Menu", () => {
  it("closes on Escape, with the focus back on its button", () => {
    render(menu());
    open();
    act(() => {
      document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
    });
    expect(details().open).toBe(false);
    expect(document.activeElement).toBe(screen.getByText("Retry"));
  });

  it("closes on a click outside it, not inside", () => {
    render(menu());
    open();
    fireEvent.mouseDown(screen.getByRole("menuitem"));
    expect(details().open).toBe(true);
    fireEvent.mouseDown(screen.getByText("outside"));
    expect(details().open).toBe(false);
  });

  it("closes when the run shown changes, and when an item is chosen", () => {
    const { rerender } = render(menu("run-1"));
    open();
    rerender(menu("run-2"));
    expect(details().open).toBe(false);
    open();
    fireEvent.click(screen.getByRole("menuitem"));
    expect(details().open).toBe(false);
  });
});

describe("plural", () => {
  it("says counts in words, never (s)", () => {
    expect(plural(1, "thing")).toBe("1 thing");
    expect(plural(3, "thing")).toBe("3 things");
    expect(plural(2, "execution")).toBe("2 executions");
  });
});

describe("runKindLabel", () => {
  it("says a run's kind in words, never run_again", () => {
    expect(runKindLabel("run_again")).toBe("run again");
    expect(runKindLabel("reapply")).toBe("re-apply");
    expect(runKindLabel("deploy")).toBe("deploy");
    expect(runKindLabel("some_new_kind")).toBe("some new kind");
  });
});

describe("forceRemoved", () => {
  it("asks for an abandon manifest only after a force-removal", () => {
    const h = (to: string, error: string | null) => ({ to, error });
    expect(forceRemoved([h("deployed", null), h("removed", "force-removed: its VMs … were left behind")])).toBe(true);
    expect(forceRemoved([h("deployed", null), h("removing", null), h("removed", null)])).toBe(false);
    expect(forceRemoved([])).toBe(false);
  });
});
