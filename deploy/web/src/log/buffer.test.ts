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
    expect(b.shifted).toBe(1500);
    expect(b.at(0).text).toBe("line 1500");
    expect(b.at(999).text).toBe("line 2499");
    expect(b.push(line(10))).toBe(true); // dropped long ago: new to the buffer
  });

  it("searches and finds lines by id", () => {
    const b = new LogBuffer();
    for (const [i, t] of ["apply Start", "error: boom", "ERROR again"].entries()) b.push(line(i, t));
    expect(b.search("error")).toEqual([1, 2]);
    expect(b.search("")).toEqual([]);
    expect(b.indexOf("r", "1-2")).toBe(2);
    expect(b.indexOf("r", "9-9")).toBe(-1);
  });

  it("prepends older lines within the cap, dropping the oldest and repeats", () => {
    const b = new LogBuffer(1000);
    for (let i = 900; i < 1000; i++) b.push(line(i));
    const older = Array.from({ length: 901 }, (_, i) => line(i)); // 0..900: 900 is held already
    expect(b.prepend(older)).toBe(900);
    expect(b.length).toBe(1000);
    expect(b.dropped).toBe(0);
    expect(b.at(0).text).toBe("line 0");
    expect(b.at(999).text).toBe("line 999");
    const c = new LogBuffer(10);
    for (let i = 95; i < 100; i++) c.push(line(i));
    expect(c.prepend(Array.from({ length: 95 }, (_, i) => line(i)))).toBe(5);
    expect(c.dropped).toBe(90);
    // Put first: those that fit; none of the held lines went.
    expect([c.prepended, c.shifted]).toEqual([5, 0]);
    expect(c.at(0).text).toBe("line 90");
    expect(c.indexOf("r", "1-94")).toBe(4);
  });
});
