import { describe, expect, it } from "vitest";
import {
  checkDone,
  driftButtons,
  driftHeadline,
  driftValue,
  findingChange,
  findingMachine,
  findingProperty,
  findingWho,
  ifMatch,
  lastCheck,
  sortFindings,
  type DriftFinding,
} from "./drift";

const fmt = (iso: string) => `@${iso.slice(11, 16)}`;

function finding(over: Partial<DriftFinding>): DriftFinding {
  return {
    id: "00000000-0000-0000-0000-000000000001",
    job: "app",
    execution: 0,
    path: "memory",
    kind: "changed",
    expected: "2048",
    actual: "4096",
    since: "2026-12-04T10:00:00Z",
    changed_by: null,
    changed_at: null,
    last_seen_at: "2026-12-04T10:05:00Z",
    accepted: null,
    version: 1,
    ...over,
  };
}

describe("driftValue", () => {
  it("shows values as Proxmox does, lists and identities readably, absence as absent", () => {
    expect(driftValue("4096")).toBe("4096");
    expect(driftValue("")).toBe('""');
    expect(driftValue(null)).toBe("absent");
    expect(driftValue(["web", "prod"])).toBe("web, prod");
    expect(driftValue([])).toBe("(none)");
    expect(driftValue({ vmid: 101, node: "pve2" } as unknown as Record<string, never>)).toBe("node=pve2, vmid=101");
    expect(driftValue({} as Record<string, never>)).toBe("(none)");
  });
});

describe("finding wording", () => {
  it("names the machine as everywhere else, the property, and the change", () => {
    const f = finding({ job: "db", execution: 1, path: "scsi0.size", expected: "20G", actual: "30G" });
    expect(findingMachine(f)).toBe("db #1");
    expect(findingProperty(f)).toBe("scsi0.size");
    expect(findingChange(f)).toBe("20G → 30G");
    expect(findingProperty(finding({ path: "", kind: "missing" }))).toBe("the machine");
    expect(
      findingChange(finding({ path: "", kind: "missing", expected: { vmid: "101" } as unknown as Record<string, never>, actual: null })),
    ).toBe("vmid=101 → absent");
  });

  it("says who changed it and when only as far as the task log tells", () => {
    expect(findingWho(finding({ changed_by: "root@pam", changed_at: "2026-12-04T09:58:00Z" }), fmt)).toBe("root@pam, @09:58");
    expect(findingWho(finding({ changed_by: "root@pam" }), fmt)).toBe("root@pam");
    expect(findingWho(finding({ changed_at: "2026-12-04T09:58:00Z" }), fmt)).toBe("@09:58");
    expect(findingWho(finding({}), fmt)).toBe("");
  });

  it("sends the finding's version as a quoted ETag", () => {
    expect(ifMatch(finding({ version: 7 }))).toBe('"7"');
  });
});

describe("sortFindings", () => {
  it("puts unaccepted findings first, then by machine and property, without touching the input", () => {
    const accepted = { by: null, at: "2026-12-04T11:00:00Z", reason: "resized on purpose" };
    const input = [
      finding({ id: "a", job: "app", execution: 0, path: "tags", accepted }),
      finding({ id: "b", job: "web", execution: 0, path: "memory" }),
      finding({ id: "c", job: "app", execution: 1, path: "cores" }),
      finding({ id: "d", job: "app", execution: 1, path: "" }),
      finding({ id: "e", job: "app", execution: 0, path: "node" }),
    ];
    expect(sortFindings(input).map((f) => f.id)).toEqual(["e", "d", "c", "b", "a"]);
    expect(input.map((f) => f.id)).toEqual(["a", "b", "c", "d", "e"]);
  });
});

describe("lastCheck and driftHeadline", () => {
  it("says never checked until a check ran, and sums the findings up", () => {
    expect(lastCheck({ checked_at: null }, fmt)).toBe("Never checked");
    expect(lastCheck({ checked_at: "2026-12-04T10:05:00Z" }, fmt)).toBe("Last checked @10:05");
    expect(driftHeadline({ checked_at: null, findings: [] })).toBe("");
    expect(driftHeadline({ checked_at: "2026-12-04T10:05:00Z", findings: [] })).toBe("No drift");
    const accepted = { by: null, at: "2026-12-04T11:00:00Z", reason: "ok" };
    expect(driftHeadline({ checked_at: "2026-12-04T10:05:00Z", findings: [finding({})] })).toBe("1 change made outside Horizon");
    expect(driftHeadline({ checked_at: "2026-12-04T10:05:00Z", findings: [finding({}), finding({}), finding({ accepted })] })).toBe(
      "2 changes made outside Horizon · 1 accepted",
    );
    expect(driftHeadline({ checked_at: "2026-12-04T10:05:00Z", findings: [finding({ accepted })] })).toBe("No drift · 1 accepted");
  });
});

describe("driftButtons", () => {
  const deployed = { state: "deployed" as const, current_run: null, allowed_actions: ["edit", "run_again", "remove"] };
  it("gives a writer every button on an idle deployed stack", () => {
    expect(driftButtons(deployed, "member")).toEqual({ check: true, reapply: true, accept: true });
    expect(driftButtons({ ...deployed, state: "failed" as const }, "admin")).toEqual({ check: true, reapply: true, accept: true });
  });
  it("gives a viewer none, nor a signed-out page", () => {
    expect(driftButtons({ ...deployed, allowed_actions: [] }, "viewer")).toEqual({ check: false, reapply: false, accept: false });
    expect(driftButtons(deployed, undefined)).toEqual({ check: false, reapply: false, accept: false });
  });
  it("offers no check nor re-apply while a run is in progress", () => {
    const busy = { state: "updating" as const, current_run: {} as never, allowed_actions: ["cancel"] };
    expect(driftButtons(busy, "member")).toEqual({ check: false, reapply: false, accept: true });
  });
});

describe("checkDone", () => {
  it("is done once the stack's last check or last failure moved on", () => {
    const sent = { checked_at: "2026-12-04T10:05:00Z", failed_at: null };
    expect(checkDone(sent, sent)).toBe(false);
    expect(checkDone(sent, { ...sent, checked_at: "2026-12-04T10:07:00Z" })).toBe(true);
    expect(checkDone(sent, { ...sent, failed_at: "2026-12-04T10:07:00Z" })).toBe(true);
    expect(checkDone({ checked_at: null, failed_at: null }, { checked_at: "2026-12-04T10:07:00Z", failed_at: null })).toBe(true);
  });
});
