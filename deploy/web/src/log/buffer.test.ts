import { describe, expect, it } from "vitest";
import { LogBuffer } from "./buffer";

const line = (i: number, text = `line ${i}`) => ({ id: `1-${i}`, run: "r", fd: "stdout" as const, at: "", text });

describe("LogBuffer", () => {
  it("keeps at most cap lines, the newest, and drops repeats", () => {
    const b = new LogBuffer(1000);
    for (let i = 0; i < 2500; i++) b.push(line(i));
    expect(b.push(line(2499))).toBe(false);
    expect(b.length).toBe(1000);
    expect(b.dropped).toBe(1500);
    expect(b.at(0).text).toBe("line 1500");
    expect(b.at(999).text).toBe("line 2499");
    expect(b.push(line(10))).toBe(true); // dropped long ago: new to the buffer
  });

  it("searches and finds lines by id", () => {
    const b = new LogBuffer();
    ["apply Start", "error: boom", "ERROR again"].forEach((t, i) => b.push(line(i, t)));
    expect(b.search("error")).toEqual([1, 2]);
    expect(b.search("")).toEqual([]);
    expect(b.indexOf("r", "1-2")).toBe(2);
    expect(b.indexOf("r", "9-9")).toBe(-1);
  });
});
