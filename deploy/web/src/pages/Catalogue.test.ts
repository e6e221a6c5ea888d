import { describe, expect, it } from "vitest";
import { catalogueTab } from "./Catalogue";
import { nodeLines } from "./catalogue/Servers";
import { given, list } from "./ResourceForm";

describe("catalogue forms", () => {
  it("reads the nodes' SSH settings a line each, pinned or trusted on first use", () => {
    expect(nodeLines("pve1 10.0.0.11:22 SHA256:abc\n\n  pve2   10.0.0.12:22   tofu \n")).toEqual([
      { name: "pve1", ssh_address: "10.0.0.11:22", ssh_host_key_fingerprint: "SHA256:abc" },
      { name: "pve2", ssh_address: "10.0.0.12:22", trust_on_first_use: true },
    ]);
    // What is missing goes as empty, for the API to name the field.
    expect(nodeLines("pve3")).toEqual([{ name: "pve3", ssh_address: "", ssh_host_key_fingerprint: "" }]);
    expect(nodeLines("")).toEqual([]);
  });

  it("sends only what was filled, and lists from commas or choices", () => {
    expect(given({ a: " x ", b: "", c: "y" }, "a", "b", "c", "d")).toEqual({ a: "x", c: "y" });
    expect(list({ dns: "1.1.1.1, 9.9.9.9,," }, "dns")).toEqual(["1.1.1.1", "9.9.9.9"]);
    expect(list({ ids: ["a", "b"] }, "ids")).toEqual(["a", "b"]);
  });
});

describe("catalogue tabs (#29 item 12)", () => {
  it("shows the servers when no tab is named, and no other page for an unknown one", () => {
    expect(catalogueTab(undefined)).toBe("servers");
    expect(catalogueTab("networks")).toBe("networks");
    expect(catalogueTab("netwrks")).toBe("");
  });
});
