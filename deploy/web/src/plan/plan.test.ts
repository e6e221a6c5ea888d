import { describe, expect, it } from "vitest";
import type { Stack } from "../api/client";
import {
  busyReason,
  counts,
  entryName,
  manifestSummary,
  needsTypedName,
  reasonText,
  removeSteps,
  replacements,
  saveKind,
  saveLabel,
  typedNameMatches,
  type Plan,
  type PlanEntry,
} from "./plan";

function entry(action: PlanEntry["action"], job: string, execution: number, extra: Partial<PlanEntry> = {}): PlanEntry {
  return {
    action,
    job,
    execution,
    id: null,
    vm_id: null,
    node: "pve1",
    because: null,
    cleanup: [],
    phase: job === "db" ? "database" : "application",
    ...extra,
  };
}

function plan(order: PlanEntry[], extra: Partial<Plan> = {}): Plan {
  const by = (a: PlanEntry["action"]) => order.filter((e) => e.action === a);
  return {
    version: 3,
    create: by("create"),
    destroy: by("destroy"),
    reapply: by("reapply"),
    dependents: by("dependent"),
    order,
    addresses: { attach: [], free: [] },
    run_needed: order.length > 0,
    problems: [],
    resources: { machines: 0, vcpus: 0, memory_mib: 0, disk_gib: 0 },
    ...extra,
  };
}

describe("plan rendering", () => {
  it("counts each action and leaves out the empty ones", () => {
    const p = plan([entry("reapply", "db", 0), entry("dependent", "app", 0), entry("dependent", "app", 1), entry("create", "app", 2)]);
    expect(counts(p).map((c) => c.text)).toEqual(["1 to create", "1 to re-apply", "2 dependents run again"]);
    expect(counts(plan([]))).toEqual([]);
    expect(counts(plan([entry("dependent", "app", 0)]))[0].text).toBe("1 dependent runs again");
  });

  it("says why, never showing a secret, and names the ids it knows", () => {
    expect(reasonText({ kind: "param", param: "memory_mb", from: 512, to: 2048 })).toBe("memory_mb: 512 → 2048");
    expect(reasonText({ kind: "param", param: "admin_password", secret: true, from: "x", to: "y" })).toBe(
      "admin_password (secret) changed",
    );
    const names = (field: string, id: string) => (field === "address_id" && id === "a1" ? "vm-10 (127.0.0.10)" : undefined);
    expect(reasonText({ kind: "attachment", param: "address_id", from: "a1", to: "a2" }, names)).toBe("address: vm-10 (127.0.0.10) → a2");
    expect(reasonText({ kind: "attachment", param: "node", from: "pve1", to: "pve2" })).toBe("node: pve1 → pve2");
    expect(reasonText({ kind: "attachment", param: "startup_order", to: 3 })).toBe("startup order: none → 3");
    expect(reasonText({ kind: "input", input: "db_host", from_job: "db" })).toBe("input db_host from db changes");
    expect(reasonText({ kind: "unfinished" })).toBe("did not finish in the last run");
    expect(entryName(entry("reapply", "app", 1))).toBe("app #1");
  });

  it("tells in which order a job is replaced", () => {
    const addFirst = plan([entry("create", "app", 2), entry("destroy", "app", 0, { cleanup: ["deregister"] })]);
    expect(replacements(addFirst)).toEqual([{ job: "app", order: "add-first" }]);
    const removeFirst = plan([entry("destroy", "app", 0), entry("create", "app", 1)]);
    expect(replacements(removeFirst)).toEqual([{ job: "app", order: "remove-first" }]);
    expect(replacements(plan([entry("create", "app", 1), entry("destroy", "db", 0)]))).toEqual([]);
  });
});

describe("confirmation rules", () => {
  it("saves plain edits without a run, and re-applies only what the plan runs", () => {
    expect(saveKind(plan([]), false)).toBe("nothing");
    expect(saveKind(plan([]), true)).toBe("save");
    expect(saveKind(undefined, true)).toBe("save");
    expect(saveKind(plan([entry("reapply", "app", 0)]), false)).toBe("reapply");
    expect(saveKind(plan([entry("reapply", "app", 0)]), true)).toBe("reapply");
    expect(saveLabel("reapply")).toBe("Save and re-apply");
    expect(saveLabel("save")).toBe("Save");
  });

  it("wants the name typed iff the plan destroys or replaces a machine, and exactly", () => {
    const addr = "0190b2c4-0000-7000-8000-000000000001";
    expect(needsTypedName(plan([entry("reapply", "app", 0), entry("create", "app", 1)]))).toBe(false);
    expect(needsTypedName(plan([entry("destroy", "app", 1)]))).toBe(true);
    // A replace: the job's machine is destroyed and another created in the same save.
    expect(needsTypedName(plan([entry("create", "app", 2), entry("destroy", "app", 1)]))).toBe(true);
    // Freeing addresses alone never asks; with a destroy it asks, as the destroy does.
    expect(needsTypedName(plan([entry("reapply", "app", 0)], { addresses: { attach: [], free: [addr] } }))).toBe(false);
    expect(needsTypedName(plan([], { addresses: { attach: [], free: [addr] }, run_needed: false }))).toBe(false);
    expect(needsTypedName(plan([entry("destroy", "app", 1)], { addresses: { attach: [], free: [addr] } }))).toBe(true);
    // Whether or not the plan says a run is needed.
    expect(needsTypedName(plan([entry("destroy", "app", 1)], { run_needed: false }))).toBe(true);
    expect(needsTypedName(undefined)).toBe(false);
    expect(typedNameMatches("web-e2e", "web-e2e")).toBe(true);
    expect(typedNameMatches(" web-e2e ", "web-e2e")).toBe(true);
    expect(typedNameMatches("web-e2", "web-e2e")).toBe(false);
    expect(typedNameMatches("WEB-E2E", "web-e2e")).toBe(false);
    expect(typedNameMatches("", "")).toBe(false);
  });

  it("disables editing while a run is in progress, saying why", () => {
    const run: Stack["current_run"] & object = {
      id: "r",
      stack_id: "s",
      kind: "run_again",
      state: "running",
      actor_id: null,
      error: null,
      allowed_actions: [],
      created_at: "",
      started_at: null,
      finished_at: null,
    };
    expect(busyReason({ state: "deployed", current_run: null })).toBe("");
    expect(busyReason({ state: "failed", current_run: null })).toBe("");
    expect(busyReason({ state: "updating", current_run: { ...run } })).toBe(
      "A run again run is running: editing is possible again when it ends.",
    );
    expect(busyReason({ state: "removing", current_run: null })).toMatch(/^The stack is removing/);
  });

  it("lists what removing does, in order", () => {
    const exec = (state: "active" | "removed") => ({ state }) as never;
    const s = {
      state: "deployed" as const,
      deployed_at: "x",
      jobs: { db: { executions: [exec("active")] }, app: { executions: [exec("active"), exec("active"), exec("removed")] } },
    };
    const steps = removeSteps(s, ["app"], ["database", "application"]);
    expect(steps[0]).toBe("The cleanup scripts of app run on their machines.");
    expect(steps[1]).toBe("Its 3 executions are destroyed in reverse phase order (application, then database).");
    expect(steps).toHaveLength(4);
    expect(removeSteps(s, [], ["database"])[0]).toMatch(/^Its 3 executions are destroyed/);
    // Action instances are undone first, before any cleanup or destroy.
    expect(removeSteps(s, ["app"], ["database"], 2).slice(0, 2)).toEqual([
      "Its 2 action instances are undone, newest first.",
      "The cleanup scripts of app run on their machines.",
    ]);
    expect(removeSteps({ ...s, state: "draft" }, ["app"], [])).toEqual(["The draft is deleted at once; nothing was ever built."]);
  });

  it("summarises what a force-remove leaves behind", () => {
    const m = {
      stack_id: "s",
      stack_name: "n",
      team_id: "t",
      workspaces: ["ws1", "ws2"],
      nagios_hosts: [],
      vms: [{ job: "db", execution: 0, name: "n-db-1", proxmox_server_id: null, vm_id: 100, node: "pve1", pool: "dev", tags: [] }],
      addresses: [{ id: "a", network_id: "n", name: "vm-10", ip: "127.0.0.10" }],
      action_instances: [{ id: "i", action: "create-pool", number: 1, template_version: 1, workspace: "ws2" }],
    };
    expect(manifestSummary(m)).toBe("1 VM, 1 address, 2 Terraform workspaces, 0 Nagios hosts, 1 action instance");
  });
});
