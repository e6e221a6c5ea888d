import { describe, expect, it } from "vitest";
import {
  createBody,
  deliveryStatus,
  editValues,
  eventLabel,
  EVENTS,
  firstBytes,
  GLOBAL,
  mayManage,
  scopeLabel,
  SCOPES,
  updateBody,
  type Webhook,
} from "./notify";

const hook: Webhook = {
  id: "w1",
  team_id: "t1",
  name: "bot",
  kind: "standard",
  url: "https://bots.example.org",
  events: ["run.finished", "iso.built"],
  enabled: false,
  disabled_reason: null,
  last_delivery: null,
  version: 3,
  created_at: "2026-12-04T10:00:00Z",
  updated_at: "2026-12-04T10:00:00Z",
};

describe("eventLabel", () => {
  it("says every event the API names in plain words, each differently", () => {
    const labels = EVENTS.map(eventLabel);
    for (const [i, l] of labels.entries()) {
      expect(l, EVENTS[i]).not.toContain(".");
      expect(l, EVENTS[i]).not.toContain("_");
    }
    expect(new Set(labels).size).toBe(EVENTS.length);
  });
  it("names the test message, and keeps an unknown event readable", () => {
    expect(eventLabel("webhook.test")).toBe("Test message");
    expect(eventLabel("stack.backup_done")).toBe("stack backup done");
  });
});

describe("createBody", () => {
  it("sends a team's subscription with its team and the chosen events", () => {
    expect(
      createBody({ name: " bot ", url: "https://x.example/h ", kind: "slack", team_id: "t1", events: ["run.finished"], enabled: true }),
    ).toEqual({
      name: "bot",
      url: "https://x.example/h",
      kind: "slack",
      team_id: "t1",
      events: ["run.finished"],
      enabled: true,
    });
  });
  it("leaves team_id out of a global one and defaults the kind and enabled", () => {
    const b = createBody({ name: "all", url: "https://x.example", kind: "", team_id: GLOBAL, events: [] });
    expect(b).toEqual({ name: "all", url: "https://x.example", kind: "standard", events: [], enabled: false });
    expect("team_id" in b).toBe(false);
  });
});

describe("updateBody", () => {
  const initial = editValues(hook);
  it("sends nothing when nothing changed, and never the shown URL", () => {
    expect(initial.url).toBe("");
    expect(updateBody({ ...initial, events: ["iso.built", "run.finished"] }, initial)).toEqual({});
  });
  it("sends only what changed", () => {
    expect(
      updateBody({ ...initial, name: "bot2", url: "https://new.example/h", events: ["run.finished"], enabled: true }, initial),
    ).toEqual({
      name: "bot2",
      url: "https://new.example/h",
      events: ["run.finished"],
      enabled: true,
    });
    expect(updateBody({ ...initial, kind: "mattermost" }, initial)).toEqual({ kind: "mattermost" });
  });
});

describe("deliveries", () => {
  it("says the outcome with the HTTP status, or that there was no answer", () => {
    expect(deliveryStatus({ state: "delivered", last_status: 200, attempts: 1 })).toBe("delivered · HTTP 200");
    expect(deliveryStatus({ state: "pending", last_status: null, attempts: 2 })).toBe("pending · no answer");
    expect(deliveryStatus({ state: "pending", last_status: null, attempts: 0 })).toBe("pending");
  });
  it("shows the first bytes of an answer on one line", () => {
    expect(firstBytes(null)).toBe("");
    expect(firstBytes("ok\n  thanks")).toBe("ok thanks");
    const long = firstBytes("x".repeat(500), 10);
    expect(long).toHaveLength(10);
    expect(long.endsWith("…")).toBe(true);
  });
});

describe("scopes", () => {
  it("offers every scope with a line of its own", () => {
    expect(SCOPES.map((s) => s.value)).toEqual(["full", "deploy", "read", "prometheus"]);
    for (const s of SCOPES) expect(scopeLabel(s.value)).toBe(s.label);
    expect(scopeLabel("future")).toBe("future");
  });
  it("lets members and admins with a full token manage, nobody else", () => {
    expect(mayManage("member", "full")).toBe(true);
    expect(mayManage("admin", undefined)).toBe(true);
    expect(mayManage("viewer", "full")).toBe(false);
    expect(mayManage("admin", "read")).toBe(false);
    expect(mayManage("member", "deploy")).toBe(false);
    expect(mayManage(undefined, "full")).toBe(false);
  });
});
