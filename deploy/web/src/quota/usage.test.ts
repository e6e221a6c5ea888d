import { describe, expect, it } from "vitest";
import { usageLines } from "./usage";

describe("team usage", () => {
  it("reads what is used, the limit and what is left, or no quota", () => {
    const lines = usageLines({
      machines: { used: 3, limit: 10, remaining: 7 },
      vcpus: { used: 6, limit: 4, remaining: 0 },
      memory_mib: { used: 2048, limit: null, remaining: null },
      disk_gib: { used: 0, limit: 0, remaining: 0 },
    });
    expect(lines.map((l) => l.text)).toEqual([
      "3 of 10 used, 7 left",
      "6 of 4 used, 0 left",
      "2048 MiB used (no quota)",
      "0 of 0 GiB used, 0 GiB left",
    ]);
    expect(lines[1]).toMatchObject({ dimension: "vcpus", label: "vCPUs", used: 6, limit: 4 });
  });
});
