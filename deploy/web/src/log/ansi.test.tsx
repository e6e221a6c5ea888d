// Log lines' colours rendered safely, and their time (#29 item 13).
import { cleanup, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { ansiSegments, lineTime } from "./ansi";
import { LineText } from "./LogView";

afterEach(cleanup);

describe("ansiSegments", () => {
  it("keeps colours, bold and underline as classes and drops other escapes", () => {
    expect(ansiSegments("\x1b[1m\x1b[32mApply complete!\x1b[0m Resources: 1 added")).toEqual([
      { text: "Apply complete!", classes: ["ansi-fg-2", "ansi-bold"] },
      { text: " Resources: 1 added", classes: [] },
    ]);
    expect(ansiSegments("\x1b[91;4merror\x1b[24m:\x1b[39m x\x1b[2K\x1b[1G")).toEqual([
      { text: "error", classes: ["ansi-fg-9", "ansi-underline"] },
      { text: ":", classes: ["ansi-fg-9"] },
      { text: " x", classes: [] },
    ]);
    expect(ansiSegments("\x1b[38;5;208morange\x1b[m")).toEqual([{ text: "orange", classes: [] }]);
    expect(ansiSegments("plain")).toEqual([{ text: "plain", classes: [] }]);
  });

  it("renders a line's markup as text, never as elements", () => {
    const { container } = render(<LineText text={'\x1b[31m<img src=x onerror="alert(1)"><b>bold</b>\x1b[0m'} />);
    expect(container.querySelector("img, b")).toBeNull();
    expect(container.textContent).toBe('<img src=x onerror="alert(1)"><b>bold</b>');
    expect(container.querySelector(".ansi-fg-1")?.textContent).toContain("<b>bold</b>");
  });
});

describe("lineTime", () => {
  it("says when a line was written on the reader's clock", () => {
    expect(lineTime("2026-01-01T10:02:03Z")).toMatch(/^\d\d:02:03$/);
    expect(lineTime("nonsense")).toBe("");
  });
});
