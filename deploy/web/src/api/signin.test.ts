import { describe, expect, it } from "vitest";
import { parseSignInLink } from "./signin";

describe("parseSignInLink", () => {
  it("reads a code and where to go next", () => {
    expect(parseSignInLink("#code=hzc_abc")).toEqual({ code: "hzc_abc", next: "#/stacks" });
    expect(parseSignInLink(`#code=hzc_abc&next=${encodeURIComponent("#/isos")}`)).toEqual({ code: "hzc_abc", next: "#/isos" });
  });
  it("never follows next off the console's routes", () => {
    expect(parseSignInLink(`#code=c&next=${encodeURIComponent("https://evil.example")}`)).toEqual({ code: "c", next: "#/stacks" });
    expect(parseSignInLink(`#code=c&next=${encodeURIComponent("javascript:alert(1)")}`)).toEqual({ code: "c", next: "#/stacks" });
    expect(parseSignInLink("#code=c&next=%E0%A4%A")).toEqual({ code: "c", next: "#/stacks" });
  });
  it("recognises an old token link without taking its token", () => {
    const l = parseSignInLink("#token=hzn_secret");
    expect(l).toEqual({ legacyToken: true, next: "#/stacks" });
    expect(JSON.stringify(l)).not.toContain("hzn_secret");
  });
  it("leaves other fragments alone", () => {
    expect(parseSignInLink("#/stacks/1")).toBeNull();
    expect(parseSignInLink("")).toBeNull();
  });
});
