// The client's types are generated from openapi/openapi.yaml: this fails when schema.d.ts is
// not what openapi-typescript makes of the current contract (run `npm run gen`).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";

it("schema.d.ts is generated from the current openapi.yaml", () => {
  const web = join(__dirname, "..", "..");
  const out = join(mkdtempSync(join(tmpdir(), "schema-")), "schema.d.ts");
  execFileSync(join(web, "node_modules", ".bin", "openapi-typescript"), [join(web, "..", "..", "openapi", "openapi.yaml"), "-o", out], {
    stdio: "pipe",
  });
  expect(
    readFileSync(join(web, "src", "api", "schema.d.ts"), "utf8") === readFileSync(out, "utf8"),
    "src/api/schema.d.ts is stale: run `npm run gen` in deploy/web",
  ).toBe(true);
}, 30_000);
