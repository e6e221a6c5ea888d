import { describe, expect, it } from "vitest";
import type { FormJob, Stack, TemplateForm } from "../api/client";
import {
  addExecution,
  canAdd,
  changedFields,
  canRemove,
  deployProblems,
  execNumber,
  fieldLabel,
  htmlPattern,
  problemsAtPositions,
  executionBounds,
  fieldErrors,
  formStart,
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
  attachments: [
    { kind: "address", required: true },
    { kind: "node", required: true },
    { kind: "startup_order", required: false },
  ],
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
const form: TemplateForm = {
  template: "t",
  phases: [
    { name: "database", jobs: [db] },
    { name: "application", jobs: [app] },
  ],
};
const opts: Options = {
  addresses: [{ value: "a1", label: "vm-1" }],
  sshKeys: [
    { value: "k1", label: "laptop" },
    { value: "k2", label: "desk" },
  ],
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
    expect(jobs.db.executions[0]).toEqual({
      parameters: { cores: 1, memory_mb: 512 },
      address_id: "a1",
      ssh_key_id: null,
      proxmox_server_id: "s1",
      node: "pve1",
      pool: "",
    });
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
      name: "s",
      description: "",
      labels: ["a", "b"],
      team_id: "t",
      environment_id: "e",
      jobs: {
        db: {
          executions: [
            {
              id: "x1",
              parameters: { cores: 4, memory_mb: 1024 },
              address_id: "a9",
              ssh_key_id: "k2",
              proxmox_server_id: "s1",
              node: "pve1",
              pool: "dev",
              iso_id: null,
              nagios: null,
              node_exporter: false,
              startup_order: null,
              state: "active",
            },
          ],
        },
        app: {
          executions: [
            {
              id: "y1",
              parameters: { motd: "m" },
              address_id: null,
              ssh_key_id: null,
              proxmox_server_id: null,
              node: "",
              pool: "",
              iso_id: null,
              nagios: null,
              node_exporter: false,
              startup_order: 2,
              state: "active",
            },
            {
              id: "y2",
              parameters: {},
              address_id: null,
              ssh_key_id: null,
              proxmox_server_id: null,
              node: "",
              pool: "",
              iso_id: null,
              nagios: null,
              node_exporter: false,
              startup_order: null,
              state: "active",
            },
          ],
        },
      },
    } as unknown as Stack;
    const v = fromStack(stack, form, opts);
    expect(v.labels).toBe("a, b");
    expect(v.jobs.db[0]).toMatchObject({
      id: "x1",
      parameters: { cores: 4, memory_mb: 1024 },
      address_id: "a9",
      ssh_key_id: "k2",
      pool: "dev",
    });
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

describe("deploy on an incomplete form (#29 item 10)", () => {
  const empty: Options = { addresses: [], sshKeys: [], servers: [], isos: [], nagios: false, hostgroups: [] };
  const withPool: FormJob = { ...db, attachments: db.attachments.map((a) => ({ ...a, required: true })) };
  const f: TemplateForm = {
    template: "t",
    phases: [
      { name: "database", jobs: [withPool] },
      { name: "application", jobs: [app] },
    ],
  };

  it("flags every required field at once, not only the name", () => {
    const v = initialValues(f, empty);
    const got = deployProblems(f, v, { name: " ", team_id: "t1", environment_id: "e1" }).map((p) => p.field);
    expect(got).toEqual([
      "name",
      "jobs.db.executions[0].address_id",
      "jobs.db.executions[0].ssh_key_id",
      "jobs.db.executions[0].proxmox_server_id",
      "jobs.db.executions[0].node",
      "jobs.db.executions[0].pool",
      "jobs.app.executions[0].address_id",
      "jobs.app.executions[0].proxmox_server_id",
      "jobs.app.executions[0].node",
      "jobs.app.executions[1].address_id",
      "jobs.app.executions[1].proxmox_server_id",
      "jobs.app.executions[1].node",
    ]);
    // A generated secret left empty is not missing.
    expect(got.some((x) => x.includes("admin_password"))).toBe(false);
  });

  it("checks a parameter's pattern without showing the regular expression", () => {
    const pooled: FormJob = {
      ...db,
      attachments: [],
      parameters: {
        type: "object",
        properties: { pool: { type: "string", pattern: "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}$", description: "The pool's id" } },
        required: ["pool"],
      },
    };
    const g: TemplateForm = { template: "t", phases: [{ name: "p", jobs: [pooled] }] };
    const v = initialValues(g, empty);
    v.jobs.db[0].parameters.pool = "no spaces allowed";
    expect(deployProblems(g, v, { name: "n", team_id: "t", environment_id: "e" })).toEqual([
      { field: "jobs.db.executions[0].parameters.pool", message: "is not in the expected format: The pool's id" },
    ]);
    v.jobs.db[0].parameters.pool = "dev-1.a";
    expect(deployProblems(g, v, { name: "n", team_id: "t", environment_id: "e" })).toEqual([]);
    v.jobs.db[0].parameters.pool = "";
    expect(deployProblems(g, v, { name: "n", team_id: "t", environment_id: "e" })[0].message).toBe("is required");
  });
});

describe("field labels in words (#29 item 10)", () => {
  it("names a field by its label, never by its API path", () => {
    const v = initialValues(form, opts);
    expect(fieldLabel("jobs.app.executions[0].address_id", form, v)).toBe("app #0 · Address");
    expect(fieldLabel("jobs.db.executions[0].ssh_key_id", form, v)).toBe("db #0 · SSH key");
    expect(fieldLabel("jobs.app.executions[1].parameters.motd", form, v)).toBe("app #1 · motd");
    expect(fieldLabel("labels[1]", form, v, ["ok", "Web!"])).toBe('Label "Web!"');
    expect(fieldLabel("labels[4]", form, v, [])).toBe("Label 5");
    expect(fieldLabel("environment_id", form, v)).toBe("Environment");
    expect(fieldLabel("jobs.app.executions", form, v)).toBe("app: its machines");
    expect(fieldLabel("/name", form, v)).toBe("Name");
  });
});

describe("pattern attributes under the v flag (#29 item 10)", () => {
  const compiles = (p: string) => {
    try {
      new RegExp(`^(?:${p})$`, "v");
      return true;
    } catch {
      return false;
    }
  };
  it("escapes what the v flag refuses and keeps the meaning", () => {
    const src = "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}$";
    expect(compiles(src)).toBe(false); // as the sandbox-vm template writes it
    const p = htmlPattern(src)!;
    expect(compiles(p)).toBe(true);
    const re = new RegExp(`^(?:${p})$`, "v");
    expect(re.test("dev-1.a")).toBe(true);
    expect(re.test("-dev")).toBe(false);
    expect(re.test("a b")).toBe(false);
    for (const [s, ok, bad] of [
      ["[-a]+", "a-a", "b"],
      ["[a(|)]+", "a(|)", "b"],
      ["[^-]x", "ax", "-x"],
      ["[a&&b]", "&", "c"],
      ["^1\\.[0-9]{2}$", "1.31", "1x31"],
    ] as const) {
      const q = htmlPattern(s)!;
      expect(compiles(q), s).toBe(true);
      expect(new RegExp(`^(?:${q})$`, "v").test(ok), `${s} ~ ${ok}`).toBe(true);
      expect(new RegExp(`^(?:${q})$`, "v").test(bad), `${s} !~ ${bad}`).toBe(false);
    }
    expect(htmlPattern(undefined)).toBeUndefined();
    expect(htmlPattern("(unclosed")).toBeUndefined();
  });
});

describe("a machine keeps its number (#29 item 8)", () => {
  const stack = (state: string) =>
    ({
      name: "s",
      description: "",
      labels: [],
      team_id: "t",
      environment_id: "e",
      state,
      jobs: {
        db: { executions: [{ id: "d0", index: 0, state: "active", parameters: {}, node: "pve1", pool: "", node_exporter: false }] },
        app: {
          executions: [
            { id: "a0", index: 0, state: "removed", parameters: {}, node: "", pool: "", node_exporter: false },
            { id: "a1", index: 1, state: "active", parameters: {}, node: "", pool: "", node_exporter: false },
            { id: "a2", index: 2, state: "active", parameters: {}, node: "", pool: "", node_exporter: false },
          ],
        },
      },
    }) as unknown as Stack;

  it("after removing #1 of a built stack the survivor stays #2, and an added one gets the API's next index", () => {
    let v = fromStack(stack("deployed"), form, opts);
    expect(v.jobs.app.map((_, i) => execNumber(v, "app", i))).toEqual([1, 2]);
    v = removeExecution({ ...v, jobs: { ...v.jobs, app: [...v.jobs.app, newExecution(app, opts)] } }, app, 0);
    expect(v.jobs.app.map((_, i) => execNumber(v, "app", i))).toEqual([2, 3]);
    expect(fieldLabel("jobs.app.executions[0].node", form, v)).toBe("app #2 · Node");
  });

  it("keeps a draft's saved indexes (a duplicate's) and numbers a new execution after them", () => {
    const v = fromStack(stack("draft"), form, opts);
    expect(v.jobs.app.map((_, i) => execNumber(v, "app", i))).toEqual([1, 2]);
    const grown = { ...v, jobs: { ...v.jobs, app: [...v.jobs.app, newExecution(app, opts)] } };
    expect(execNumber(grown, "app", 2)).toBe(3);
    // A problem may name an execution the form does not hold: named, never a crash.
    expect(fieldLabel("jobs.app.executions[5].address_id", form, { jobs: { ...v.jobs, app: [] }, nextIndex: v.nextIndex })).toBe(
      "app #5 · Address",
    );
  });

  it("puts the stack's problems, named by index, on the fields of the form, named by place", () => {
    const v = fromStack(stack("deployed"), form, opts);
    expect(
      problemsAtPositions(
        [
          { field: "jobs.app.executions[2].address_id", message: "is required" },
          { field: "jobs.app.executions[1]", message: "x" },
          { field: "jobs.app.executions[7].node", message: "gone" },
          { field: "name", message: "is taken" },
        ],
        v,
      ).map((p) => p.field),
    ).toEqual(["jobs.app.executions[1].address_id", "jobs.app.executions[0]", "jobs.app.executions[7].node", "name"]);
  });
});

describe("what the form starts with", () => {
  // A draft saved with three apps (the form's app takes two to three).
  const exec = (id: string, index: number) => ({
    id,
    index,
    parameters: {},
    address_id: null,
    ssh_key_id: null,
    proxmox_server_id: null,
    node: "",
    pool: "",
    iso_id: null,
    nagios: null,
    node_exporter: false,
    startup_order: null,
    state: "active",
  });
  const draft = {
    id: "s1",
    name: "web",
    description: "",
    labels: [],
    team_id: "t1",
    environment_id: "e1",
    state: "draft",
    jobs: { db: { executions: [exec("x1", 0)] }, app: { executions: [exec("y1", 0), exec("y2", 1), exec("y3", 2)] } },
  } as unknown as Stack;

  it("is a new stack's defaults once the form and its options are there", () => {
    expect(formStart(undefined, opts, false, undefined)).toBeNull();
    expect(formStart(form, undefined, false, undefined)).toBeNull();
    expect(formStart(form, opts, false, undefined)?.jobs.app).toHaveLength(2);
  });

  it("waits for the stack it edits, whatever else has arrived first", () => {
    // The form and its options come before the stack: no defaults meanwhile, which a save
    // would write over the stack's executions.
    expect(formStart(form, opts, true, undefined)).toBeNull();
    const v = formStart(form, opts, true, draft);
    expect(v?.jobs.app.map((e) => e.id)).toEqual(["y1", "y2", "y3"]);
    expect(toJobs(v!, form).app.executions).toHaveLength(3);
  });
});
