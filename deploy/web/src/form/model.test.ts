import { describe, expect, it } from "vitest";
import type { FormJob, Stack, TemplateForm } from "../api/client";
import {
  addExecution,
  canAdd,
  changedFields,
  canRemove,
  executionBounds,
  fieldErrors,
  fromStack,
  initialValues,
  knownFields,
  newExecution,
  type Options,
  removeExecution,
  toJobs,
  unplaced,
} from "./model";

// The form of deploy/examples/sandbox-vm as the API serves it, plus a job with every type.
const db: FormJob = {
  name: "db",
  machine: true,
  executions: { multiple: false, min: 1, max: 1 },
  attachments: [
    { kind: "address", required: true },
    { kind: "ssh_key", required: true },
    { kind: "node", required: true },
    { kind: "pool", required: false },
  ],
  depends_on: [],
  parameters: {
    type: "object",
    properties: {
      cores: { type: "integer", minimum: 1, maximum: 8, default: 1 },
      memory_mb: { type: "integer", enum: [512, 1024, 2048], default: 512 },
    },
    "x-horizon-order": ["cores", "memory_mb"],
  },
};
const app: FormJob = {
  name: "app",
  machine: true,
  executions: { multiple: true, min: 2, max: 3 },
  attachments: [{ kind: "address", required: true }, { kind: "node", required: true }, { kind: "startup_order", required: false }],
  depends_on: ["db"],
  parameters: {
    type: "object",
    properties: {
      ratio: { type: "number", minimum: 0, maximum: 1 },
      tls: { type: "boolean" },
      flavour: { type: "string", enum: ["only"] },
      motd: { type: "string" },
      admin_password: { type: "string", writeOnly: true, "x-horizon-secret": true, "x-horizon-generate": true },
    },
    "x-horizon-order": ["motd", "ratio", "tls", "flavour", "admin_password"],
  },
};
const form: TemplateForm = { template: "t", phases: [{ name: "database", jobs: [db] }, { name: "application", jobs: [app] }] };
const opts: Options = {
  addresses: [{ value: "a1", label: "vm-1" }],
  sshKeys: [{ value: "k1", label: "laptop" }, { value: "k2", label: "desk" }],
  servers: [{ value: "s1", label: "sandbox", nodes: ["pve1"], pools: ["dev", "prod"] }],
  isos: [],
  nagios: false,
  hostgroups: [],
};

describe("initial values", () => {
  it("uses defaults and preselects every single option", () => {
    const e = newExecution(db, opts);
    expect(e.parameters).toEqual({ cores: 1, memory_mb: 512 });
    expect(e.address_id).toBe("a1"); // one free address
    expect(e.ssh_key_id).toBe(""); // two keys: the user chooses
    expect(e.proxmox_server_id).toBe("s1");
    expect(e.node).toBe("pve1"); // the one node of the one server
    expect(e.pool).toBe(""); // two pools
    const a = newExecution(app, opts);
    expect(a.parameters.flavour).toBe("only"); // a single enum value
    expect(a.parameters.tls).toBe(false);
    expect(a.parameters.admin_password).toBe("");
  });

  it("starts a multiple job with its minimum and a single one with one", () => {
    const v = initialValues(form, opts);
    expect(v.jobs.db).toHaveLength(1);
    expect(v.jobs.app).toHaveLength(2);
    expect(executionBounds({ ...app, executions: { multiple: true, min: 0, max: 5 } }).start).toBe(1);
  });
});

describe("executions within min and max", () => {
  it("adds up to max and removes down to min", () => {
    let v = initialValues(form, opts);
    expect(canRemove(app, 2)).toBe(false);
    expect(removeExecution(v, app, 0)).toBe(v);
    v = addExecution(v, app, opts);
    expect(v.jobs.app).toHaveLength(3);
    expect(canAdd(app, 3)).toBe(false);
    expect(addExecution(v, app, opts).jobs.app).toHaveLength(3);
    v.jobs.app[2].parameters.motd = "third";
    v = removeExecution(v, app, 0);
    expect(v.jobs.app.map((e) => e.parameters.motd)).toEqual(["", "third"]);
    expect(canAdd(db, 1)).toBe(false);
  });
});

describe("the request", () => {
  it("converts each type and leaves empty answers out", () => {
    const v = initialValues(form, opts);
    Object.assign(v.jobs.app[0].parameters, { ratio: "0.5", tls: true, motd: "hi", admin_password: "" });
    v.jobs.app[0].startup_order = "3";
    const jobs = toJobs(v, form);
    expect(jobs.db.executions[0]).toEqual({ parameters: { cores: 1, memory_mb: 512 }, address_id: "a1", ssh_key_id: null, proxmox_server_id: "s1", node: "pve1", pool: "" });
    expect(jobs.app.executions[0]).toEqual({
      parameters: { motd: "hi", ratio: 0.5, tls: true, flavour: "only" }, // no password: Horizon generates it
      address_id: "a1",
      proxmox_server_id: "s1",
      node: "pve1",
      startup_order: 3,
    });
    expect(jobs.app.executions[1].startup_order).toBeNull();
  });

  it("sends a value that is not a number as typed, for the server to name", () => {
    const v = initialValues(form, opts);
    v.jobs.db[0].parameters.cores = "lots";
    expect(toJobs(v, form).db.executions[0].parameters).toEqual({ cores: "lots", memory_mb: 512 });
  });

  it("names existing executions by id once they are saved", () => {
    const stack = {
      name: "s", description: "", labels: ["a", "b"], team_id: "t", environment_id: "e",
      jobs: {
        db: { executions: [{ id: "x1", parameters: { cores: 4, memory_mb: 1024 }, address_id: "a9", ssh_key_id: "k2", proxmox_server_id: "s1", node: "pve1", pool: "dev", iso_id: null, nagios: null, node_exporter: false, startup_order: null, state: "active" }] },
        app: { executions: [
          { id: "y1", parameters: { motd: "m" }, address_id: null, ssh_key_id: null, proxmox_server_id: null, node: "", pool: "", iso_id: null, nagios: null, node_exporter: false, startup_order: 2, state: "active" },
          { id: "y2", parameters: {}, address_id: null, ssh_key_id: null, proxmox_server_id: null, node: "", pool: "", iso_id: null, nagios: null, node_exporter: false, startup_order: null, state: "active" },
        ] },
      },
    } as unknown as Stack;
    const v = fromStack(stack, form, opts);
    expect(v.labels).toBe("a, b");
    expect(v.jobs.db[0]).toMatchObject({ id: "x1", parameters: { cores: 4, memory_mb: 1024 }, address_id: "a9", ssh_key_id: "k2", pool: "dev" });
    const jobs = toJobs(v, form);
    expect(jobs.app.executions.map((e) => e.id)).toEqual(["y1", "y2"]);
    expect(jobs.app.executions[0].startup_order).toBe(2);
  });
});

describe("server errors", () => {
  it("land on the fields they name, and the others are listed", () => {
    const v = initialValues(form, opts);
    const errs = fieldErrors([
      { field: "jobs.app.executions[1].parameters.ratio", message: "must be at most 1" },
      { field: "jobs.db.executions[0].ssh_key_id", message: "is required" },
      { field: "name", message: "is taken" },
      { field: "jobs.app.executions[1].parameters.ratio", message: "is not a number" },
      { field: "jobs.app.executions[7].node", message: "no such execution" },
    ]);
    expect(errs.get("jobs.app.executions[1].parameters.ratio")).toEqual(["must be at most 1", "is not a number"]);
    const known = knownFields(form, v, opts);
    expect(known.has("jobs.db.executions[0].ssh_key_id")).toBe(true);
    expect(known.has("jobs.app.executions[1].startup_order")).toBe(true);
    expect(known.has("jobs.db.executions[0].startup_order")).toBe(false); // db is not asked one
    expect(unplaced(errs, known)).toEqual([{ field: "jobs.app.executions[7].node", message: "no such execution" }]);
  });
});

describe("changed meanwhile", () => {
  it("names what differs between my values and the server's", () => {
    const mine = initialValues(form, opts, { name: "a", labels: "x" });
    const theirs = structuredClone(mine);
    expect(changedFields(mine, theirs)).toEqual([]);
    theirs.name = "b";
    theirs.jobs.app[1].parameters.motd = "changed";
    theirs.jobs.db[0].node = "pve2";
    expect(changedFields(mine, theirs)).toEqual(["name", "jobs.db.executions[0].node", "jobs.app.executions[1].parameters.motd"]);
    theirs.jobs.app.pop();
    expect(changedFields(mine, theirs)).toContain("jobs.app.executions");
  });
});
