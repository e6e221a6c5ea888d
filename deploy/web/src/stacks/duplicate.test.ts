import { describe, expect, it } from "vitest";
import { notCopiedLines } from "./duplicate";

describe("notCopiedLines", () => {
  it("says per machine what the copy left out and why", () => {
    expect(
      notCopiedLines([
        { field: "jobs.db.executions[0].address_id", message: "an address belongs to one stack: pick a free one" },
        { field: "jobs.app.executions[1].parameters.admin_password", message: "a generated secret: the new stack generates its own" },
        { field: "labels", message: "odd" },
      ]),
    ).toEqual([
      "db #0 · address: an address belongs to one stack: pick a free one",
      "app #1 · admin_password: a generated secret: the new stack generates its own",
      "labels: odd",
    ]);
    expect(notCopiedLines([])).toEqual([]);
  });
});
