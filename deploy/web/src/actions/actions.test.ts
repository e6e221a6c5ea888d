import { describe, expect, it } from "vitest";
import type { Stack } from "../api/client";
import {
  actionRequest,
  actionsBlocked,
  answers,
  changedInputs,
  initialActionValues,
  instanceRows,
  machineChoices,
  machineOf,
  prefillSource,
  preselectedMachine,
  undoBlocked,
  type ActionInstance,
  type Run,
  type StackAction,
} from "./actions";

// The two actions of deploy/examples/sandbox-vm as GET /v1/stacks/{id}/actions serves them,
// with a secret input added to the script one.
const rotate: StackAction = {
  name: "rotate-api-key",
  description: "Make a new API key on one app VM",
  kind: "script",
  job: "app",
  parameters: { type: "object", properties: { key_bytes: { type: "integer", default: 16, minimum: 8, maximum: 64 } } },
  inputs: [
    { name: "db_host", from: "db.outputs.ip", secret: false, value: "10.0.0.5", problem: null },
    { name: "old_key", from: "app.outputs.api_key", secret: true, value: null, problem: null },
    { name: "app_ips", from: "app.outputs.ip", secret: false, value: ["10.0.0.6", "10.0.0.7"], problem: null },
  ],
  outputs: [{ name: "api_key", secret: true, description: "" }],
  executions: [
    { index: 0, name: "web-app-0" },
    { index: 2, name: "web-app-2" },
  ],
  execution: null,
};
const pool: StackAction = {
  name: "create-pool",
  description: "Make a pool",
  kind: "terraform",
  job: null,
  parameters: {
    type: "object",
    properties: { pool: { type: "string" }, comment: { type: "string", default: "" } },
    "x-horizon-order": ["pool", "comment"],
  },
  inputs: [{ name: "db_host", from: "db.outputs.ip", secret: false, value: null, problem: "db has no output ip yet" }],
  outputs: [],
  executions: [],
  execution: null,
};
const exec = (index: number, state: "active" | "removed") => ({ index, state }) as Stack["jobs"][string]["executions"][number];
const stack = {
  jobs: { app: { executions: [exec(0, "active"), exec(1, "active"), exec(2, "active"), exec(3, "removed")] } },
} as unknown as Stack;

describe("prefills", () => {
  it("says where each comes from, a secret one without its value", () => {
    expect(rotate.inputs.map(prefillSource)).toEqual(["from db.outputs.ip", "from app.outputs.api_key (secret)", "from app.outputs.ip"]);
    expect(prefillSource(pool.inputs[0])).toBe("from db.outputs.ip: db has no output ip yet");
  });
  it("fills the form with them, editable; a secret one stays empty", () => {
    const v = initialActionValues(rotate);
    expect(v.inputs).toEqual({ db_host: "10.0.0.5", old_key: "", app_ips: '["10.0.0.6","10.0.0.7"]' });
    expect(v.parameters).toEqual({ key_bytes: 16 });
    expect(initialActionValues(pool).parameters).toEqual({ pool: "", comment: "" });
  });
  it("sends only the inputs typed over their prefill", () => {
    const v = initialActionValues(rotate);
    expect(changedInputs(rotate.inputs, v.inputs)).toEqual({});
    expect(changedInputs(rotate.inputs, { ...v.inputs, db_host: "10.0.0.9", old_key: "k", app_ips: '["10.0.0.6"]' })).toEqual({
      db_host: "10.0.0.9",
      old_key: "k",
      app_ips: ["10.0.0.6"],
    });
    expect(changedInputs(rotate.inputs, { ...v.inputs, app_ips: "not json" })).toEqual({ app_ips: "not json" });
  });
});

describe("machines", () => {
  it("lists the job's machines; those not built cannot be picked; removed ones are gone", () => {
    expect(machineChoices(rotate, stack)).toEqual([
      // A machine is called by its index, the number in its VM's name (#29 item 8).
      { index: 0, label: "app #0 (web-app-0)", built: true },
      { index: 1, label: "app #1 (not built)", built: false },
      { index: 2, label: "app #2 (web-app-2)", built: true },
    ]);
    expect(machineChoices(pool, stack)).toEqual([]);
  });
  it("preselects the API's choice, or the only built machine, else none", () => {
    expect(preselectedMachine(rotate)).toBeNull();
    expect(preselectedMachine({ ...rotate, execution: 2 })).toBe(2);
    expect(preselectedMachine({ ...rotate, executions: [{ index: 1, name: "x" }] })).toBe(1);
    expect(preselectedMachine(pool)).toBeNull();
  });
  it("sends the machine for a script action only", () => {
    const v = { ...initialActionValues(rotate), execution: 2 };
    expect(actionRequest(rotate, v)).toEqual({ parameters: { key_bytes: 16 }, inputs: {}, execution: 2 });
    const p = initialActionValues(pool);
    p.parameters.pool = "web-1";
    expect(actionRequest(pool, p)).toEqual({ parameters: { pool: "web-1" }, inputs: {} });
  });
});

describe("when actions may run", () => {
  const s = (over: Partial<Stack>) =>
    ({ state: "deployed", current_run: null, allowed_actions: [], deployed_at: "2026-01-01T00:00:00Z", ...over }) as Stack;
  it("follows allowed_actions and says why not", () => {
    expect(actionsBlocked(s({ allowed_actions: ["edit", "run_action"] }), "member")).toBe("");
    expect(actionsBlocked(s({}), "viewer")).toBe("Viewers cannot run actions.");
    expect(actionsBlocked(s({ state: "draft", deployed_at: null }), "member")).toMatch(/draft/);
    expect(
      actionsBlocked(
        s({ current_run: { kind: "run_again", state: "running" } as Stack["current_run"], allowed_actions: ["cancel"] }),
        "member",
      ),
    ).toBe("A run again run is running: actions are possible again when it ends.");
    expect(actionsBlocked(s({ state: "failed", deployed_at: null }), "admin")).toMatch(/never deployed/);
  });
  it("undoes an instance only when the API allows it", () => {
    expect(undoBlocked({ state: "active", allowed_actions: ["undo"] }, "")).toBe("");
    expect(undoBlocked({ state: "undoing", allowed_actions: [] }, "")).toBe("It is being undone.");
    expect(undoBlocked({ state: "active", allowed_actions: [] }, "Viewers cannot run actions.")).toBe("Viewers cannot run actions.");
  });
});

describe("instances and history", () => {
  const run = (id: string, at: string, action: Record<string, unknown>, state: Run["state"] = "succeeded"): Run => ({
    id,
    stack_id: "s",
    kind: "action",
    state,
    actor_id: "u1",
    error: null,
    allowed_actions: [],
    created_at: at,
    started_at: at,
    finished_at: at,
    action: {
      name: "create-pool",
      job: null,
      execution: null,
      parameters: {},
      inputs: {},
      outputs: {},
      instance: null,
      undo: false,
      ...action,
    } as Run["action"],
  });
  const inst = (id: string, number: number, at: string, state: ActionInstance["state"] = "active"): ActionInstance => ({
    id,
    number,
    action: "create-pool",
    state,
    template_version: 1,
    commit: "c",
    workspace: "w",
    run_id: `r${number}`,
    created_by: "u1",
    created_at: at,
    applied_at: at,
    parameters: { pool: `p${number}` } as unknown as ActionInstance["parameters"],
    inputs: {},
    outputs: {},
    allowed_actions: state === "active" ? ["undo"] : [],
  });
  const runs = [
    run("u", "2026-01-01T00:03:00Z", { instance: "i1", undo: true }),
    run("r2", "2026-01-01T00:02:00Z", { instance: "i2", parameters: { pool: "p2" } }),
    run("k", "2026-01-01T00:01:30Z", { name: "rotate-api-key", job: "app", execution: 1 }),
    run("r1", "2026-01-01T00:01:00Z", { instance: "i1", parameters: { pool: "p1" } }),
  ];
  it("lists the instances the API has and the ones undone, newest first", () => {
    const rows = instanceRows([inst("i2", 2, "2026-01-01T00:02:00Z")], runs, true);
    expect(rows.map((r) => [r.number, r.state, r.parameters])).toEqual([
      [2, "active", { pool: "p2" }],
      [1, "undone", { pool: "p1" }],
    ]);
    expect(rows[1].undoneAt).toBe("2026-01-01T00:03:00Z");
    expect(instanceRows([inst("i2", 2, "2026-01-01T00:02:00Z")], runs, false)[1].number).toBeNull();
  });
  it("keeps an instance being undone as the API lists it", () => {
    const rows = instanceRows(
      [inst("i1", 1, "2026-01-01T00:01:00Z", "undoing")],
      [run("u", "2026-01-01T00:03:00Z", { instance: "i1", undo: true }, "running")],
      true,
    );
    expect(rows.map((r) => r.state)).toEqual(["undoing"]);
  });
  it("masks secrets in answers and names the machine", () => {
    expect(answers({ key_bytes: 24, token: { secret: true } }, { db_host: "10.0.0.5" })).toBe(
      "key_bytes=24, token=••••••••, db_host=10.0.0.5",
    );
    expect(machineOf(runs[2])).toBe("app #1");
    expect(machineOf(runs[1])).toBe("");
  });
});
