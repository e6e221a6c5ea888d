// The create/edit form's model, kept free of React so that unit tests can drive it: the values
// a form starts with (defaults, and the answers that have a single possible option), adding and
// removing executions within a job's bounds, the request body the values make, and where the
// server's problems land. The server stays the validator: nothing here checks more than types
// and bounds.
import { machineLabel } from "../numbering";
import type { ExecutionRequest, FormJob, FormParameter, Stack, TemplateForm } from "../api/client";

export type Scalar = string | number | boolean;

export interface ExecValues {
  id?: string;
  /**
   * index is the execution's index as the API has it, kept for the machine's life: the machine
   * is "#index" everywhere (../numbering). Unset for an execution not saved yet.
   */
  index?: number;
  parameters: Record<string, Scalar | "">;
  address_id: string;
  ssh_key_id: string;
  proxmox_server_id: string;
  node: string;
  pool: string;
  iso_id: string;
  nagios_hostgroup: string;
  node_exporter: boolean;
  startup_order: string;
}

export interface FormValues {
  name: string;
  description: string;
  labels: string;
  team_id: string;
  environment_id: string;
  jobs: Record<string, ExecValues[]>;
  /**
   * nextIndex is, per job of a saved stack, the index the API gives the first execution an edit
   * adds (one past the highest of its current executions); unset for a new stack. (A draft's
   * save numbers its executions by their place again.)
   */
  nextIndex?: Record<string, number>;
}

export interface Option {
  value: string;
  label: string;
}

export interface ServerOption extends Option {
  nodes: string[];
  pools: string[];
}

/** What the attachments may be set to, from the environment and the caller's resources. */
export interface Options {
  addresses: Option[];
  sshKeys: Option[];
  servers: ServerOption[];
  isos: Option[];
  /** Whether the environment has a Nagios server: only then is a host group asked. */
  nagios: boolean;
  /** The host groups the environment's Nagios server was found to have (empty ones may be missing). */
  hostgroups: string[];
}

export const emptyOptions: Options = { addresses: [], sshKeys: [], servers: [], isos: [], nagios: false, hostgroups: [] };

export function attachmentKinds(job: FormJob): Set<string> {
  return new Set(job.attachments.map((a) => a.kind));
}

export function orderedParameters(job: Pick<FormJob, "parameters">): [string, FormParameter][] {
  const props = job.parameters.properties ?? {};
  const order = job.parameters["x-horizon-order"] ?? Object.keys(props);
  const names = [...order, ...Object.keys(props).filter((n) => !order.includes(n))];
  return names.filter((n) => props[n]).map((n) => [n, props[n]]);
}

export function isSecret(p: FormParameter): boolean {
  return !!(p["x-horizon-secret"] || p.writeOnly);
}

/** single is the value of a choice that has exactly one option, else "". */
function single(opts: { value: string }[]): string {
  return opts.length === 1 ? opts[0].value : "";
}

export function parameterDefault(p: FormParameter): Scalar | "" {
  if (p.default !== undefined) return p.default;
  if (p.enum && p.enum.length === 1) return p.enum[0];
  if (p.type === "boolean") return false;
  return "";
}

/** parameterDefaults is the values a parameters form starts with (a job's or an action's). */
export function parameterDefaults(owner: Pick<FormJob, "parameters">): Record<string, Scalar | ""> {
  const out: Record<string, Scalar | ""> = {};
  for (const [name, p] of orderedParameters(owner)) out[name] = parameterDefault(p);
  return out;
}

/** parameterValues is what a request sends for a parameters form: typed, the empty ones left out. */
export function parameterValues(owner: Pick<FormJob, "parameters">, values: Record<string, Scalar | "">): Record<string, Scalar> {
  const params: Record<string, Scalar> = {};
  for (const [name, p] of orderedParameters(owner)) {
    const val = convert(p, values[name] ?? "");
    if (val !== undefined) params[name] = val;
  }
  return params;
}

/** newExecution is a new execution's values: defaults, and every single option preselected. */
export function newExecution(job: FormJob, opts: Options): ExecValues {
  const kinds = attachmentKinds(job);
  const parameters = parameterDefaults(job);
  const e: ExecValues = {
    parameters,
    address_id: "",
    ssh_key_id: "",
    proxmox_server_id: "",
    node: "",
    pool: "",
    iso_id: "",
    nagios_hostgroup: "",
    node_exporter: false,
    startup_order: "",
  };
  if (kinds.has("address")) e.address_id = single(opts.addresses);
  if (kinds.has("ssh_key")) e.ssh_key_id = single(opts.sshKeys);
  if (kinds.has("node")) {
    e.proxmox_server_id = single(opts.servers);
    preselectOnServer(e, opts);
  }
  if (kinds.has("iso")) e.iso_id = single(opts.isos);
  return e;
}

/** preselectOnServer fills node and pool when the chosen server has a single one of each. */
export function preselectOnServer(e: ExecValues, opts: Options) {
  const srv = opts.servers.find((s) => s.value === e.proxmox_server_id);
  if (!srv) return;
  if (!e.node || !srv.nodes.includes(e.node)) e.node = srv.nodes.length === 1 ? srv.nodes[0] : "";
  if (!e.pool || !srv.pools.includes(e.pool)) e.pool = srv.pools.length === 1 ? srv.pools[0] : "";
}

/** Bounds of a job's executions: how many a form starts with, at least and at most. */
export function executionBounds(job: FormJob): { start: number; min: number; max: number } {
  if (!job.executions.multiple) return { start: 1, min: 1, max: 1 };
  const min = Math.max(job.executions.min, 1);
  return { start: min, min, max: Math.max(job.executions.max, min) };
}

export function initialValues(form: TemplateForm, opts: Options, base?: Partial<FormValues>): FormValues {
  const jobs: FormValues["jobs"] = {};
  for (const phase of form.phases)
    for (const job of phase.jobs) {
      const n = executionBounds(job).start;
      jobs[job.name] = Array.from({ length: n }, () => newExecution(job, opts));
    }
  return { name: "", description: "", labels: "", team_id: "", environment_id: "", ...base, jobs };
}

export function canAdd(job: FormJob, count: number) {
  return count < executionBounds(job).max;
}

export function canRemove(job: FormJob, count: number) {
  return count > executionBounds(job).min;
}

export function addExecution(v: FormValues, job: FormJob, opts: Options): FormValues {
  const list = v.jobs[job.name] ?? [];
  if (!canAdd(job, list.length)) return v;
  return { ...v, jobs: { ...v.jobs, [job.name]: [...list, newExecution(job, opts)] } };
}

export function removeExecution(v: FormValues, job: FormJob, index: number): FormValues {
  const list = v.jobs[job.name] ?? [];
  if (!canRemove(job, list.length)) return v;
  return { ...v, jobs: { ...v.jobs, [job.name]: list.filter((_, i) => i !== index) } };
}

/** fromStack is the form's values for an existing stack (a draft being edited). */
export function fromStack(stack: Stack, form: TemplateForm, opts: Options): FormValues {
  const v = initialValues(form, opts, {
    name: stack.name,
    description: stack.description,
    labels: stack.labels.join(", "),
    team_id: stack.team_id,
    environment_id: stack.environment_id,
  });
  v.nextIndex = {};
  for (const phase of form.phases)
    for (const job of phase.jobs) {
      const execs = stack.jobs[job.name]?.executions;
      if (!execs) continue;
      const current = execs.filter((x) => x.state !== "removed");
      v.nextIndex[job.name] = current.reduce((n, x) => Math.max(n, x.index + 1), 0);
      v.jobs[job.name] = current.map((x) => {
        const e = newExecution(job, emptyOptions);
        e.id = x.id;
        e.index = x.index;
        for (const [name, p] of orderedParameters(job)) {
          const got = (x.parameters as Record<string, unknown>)[name];
          if (got !== undefined && got !== null && !(isSecret(p) && typeof got === "object")) e.parameters[name] = got as Scalar;
          else if (isSecret(p)) e.parameters[name] = "";
        }
        e.address_id = x.address_id ?? "";
        e.ssh_key_id = x.ssh_key_id ?? "";
        e.proxmox_server_id = x.proxmox_server_id ?? "";
        e.node = x.node;
        e.pool = x.pool;
        e.iso_id = x.iso_id ?? "";
        e.nagios_hostgroup = x.nagios?.hostgroup ?? "";
        e.node_exporter = x.node_exporter;
        e.startup_order = x.startup_order == null ? "" : String(x.startup_order);
        return e;
      });
    }
  return v;
}

/**
 * formStart is what the form shows until it is changed here: the stack's own answers when it
 * edits one (`editing`), a new stack's defaults otherwise; null while the form, its options
 * (undefined while they load) or the stack being edited are not there yet. An edited stack's
 * form waits for the stack: a new stack's defaults in its place (one execution a job, no ids)
 * would be saved over its executions.
 */
export function formStart(
  form: TemplateForm | undefined,
  opts: Options | undefined,
  editing: boolean,
  stack: Stack | undefined,
): FormValues | null {
  if (!form || !opts) return null;
  if (stack) return fromStack(stack, form, opts);
  return editing ? null : initialValues(form, opts);
}

/**
 * execNumber is the number the i-th execution of a job in the form is called by (../numbering):
 * a saved execution keeps its index whatever is removed before it (a duplicate's draft keeps
 * its original's), and a new one gets the index the API will give it (on a new stack, whose
 * executions the API numbers by their place, its place).
 */
export function execNumber(v: Pick<FormValues, "jobs" | "nextIndex">, job: string, i: number): number {
  const list = v.jobs[job] ?? [];
  // Past the list (a problem naming an execution the form does not hold): the number given.
  if (i >= list.length) return i;
  const e = list[i];
  if (e.index !== undefined) return e.index;
  if (!v.nextIndex) return i;
  let n = v.nextIndex[job] ?? 0;
  for (let j = 0; j < i; j++) if (list[j].index === undefined) n++;
  return n;
}

function convert(p: FormParameter, raw: Scalar | ""): Scalar | undefined {
  if (raw === "") return undefined;
  if (p.type === "integer" || p.type === "number") {
    const n = typeof raw === "number" ? raw : Number(raw);
    // A value that is not a number goes as typed: the server names the field.
    return Number.isNaN(n) ? raw : n;
  }
  if (p.type === "boolean") return raw === true || raw === "true";
  return String(raw);
}

/** toJobs is the `jobs` of a create or update request. */
export function toJobs(v: FormValues, form: TemplateForm): Record<string, { executions: ExecutionRequest[] }> {
  const out: Record<string, { executions: ExecutionRequest[] }> = {};
  for (const phase of form.phases)
    for (const job of phase.jobs) {
      const kinds = attachmentKinds(job);
      out[job.name] = {
        executions: (v.jobs[job.name] ?? []).map((e) => {
          const r: ExecutionRequest = { parameters: {} };
          if (e.id) r.id = e.id;
          const params = parameterValues(job, e.parameters);
          r.parameters = params as unknown as ExecutionRequest["parameters"];
          if (kinds.has("address")) r.address_id = e.address_id || null;
          if (kinds.has("ssh_key")) r.ssh_key_id = e.ssh_key_id || null;
          if (kinds.has("node")) {
            r.proxmox_server_id = e.proxmox_server_id || null;
            r.node = e.node;
          }
          if (kinds.has("pool")) r.pool = e.pool;
          if (kinds.has("iso")) r.iso_id = e.iso_id || null;
          if (kinds.has("nagios_host_group")) r.nagios = e.nagios_hostgroup ? { hostgroup: e.nagios_hostgroup } : null;
          if (kinds.has("node_exporter")) r.node_exporter = e.node_exporter;
          if (kinds.has("startup_order")) {
            const n = e.startup_order === "" ? null : Number(e.startup_order);
            r.startup_order = n === null || Number.isNaN(n) ? null : n;
          }
          return r;
        }),
      };
    }
  return out;
}

export function labelsOf(v: FormValues): string[] {
  return v.labels
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

// Field paths as the server names them in `problems` and 422 `errors[].field`.
export const execPath = (job: string, i: number) => `jobs.${job}.executions[${i}]`;
export const paramPath = (job: string, i: number, name: string) => `${execPath(job, i)}.parameters.${name}`;
export const attachmentPath = (job: string, i: number, field: string) => `${execPath(job, i)}.${field}`;

export type FieldErrors = Map<string, string[]>;

/**
 * problemsAtPositions rewrites a stack's own problems (GET's `problems`, which name an execution
 * by its index) to the form's field paths (by its place in the list, as a request's 422 errors
 * do): they differ once a machine before another is gone, or in a duplicate's draft.
 */
export function problemsAtPositions(
  problems: { field: string; message: string }[],
  v: Pick<FormValues, "jobs">,
): { field: string; message: string }[] {
  return problems.map((p) => {
    const m = /^(\/?jobs\.([^.[]+)\.executions)\[(\d+)\](.*)$/.exec(p.field);
    if (!m) return p;
    const at = (v.jobs[m[2]] ?? []).findIndex((e) => e.index === Number(m[3]));
    return at < 0 ? p : { ...p, field: `${m[1]}[${at}]${m[4]}` };
  });
}

/** fieldErrors groups the server's field errors by field path. */
export function fieldErrors(errs: { field: string; message: string }[] | undefined): FieldErrors {
  const m: FieldErrors = new Map();
  for (const e of errs ?? []) {
    const f = e.field.replace(/^\//, "");
    m.set(f, [...(m.get(f) ?? []), e.message]);
  }
  return m;
}

/** errorsFor is the messages of one field. */
export function errorsFor(m: FieldErrors, field: string): string[] {
  return m.get(field) ?? [];
}

/** unplaced is the errors no field of the form shows (see knownFields): listed above the form. */
export function unplaced(m: FieldErrors, shown: Set<string>): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  for (const [field, msgs] of m) if (!shown.has(field)) for (const message of msgs) out.push({ field, message });
  return out;
}

/** generateSecret makes a random value for a secret the user asks to generate. */
export function generateSecret(): string {
  const b = new Uint8Array(18);
  crypto.getRandomValues(b);
  return btoa(String.fromCharCode(...b)).replace(/[+/=]/g, (c) => ({ "+": "-", "/": "_", "=": "" })[c]!);
}

/** knownFields is every field path the form shows errors on, for the values it has. */
export function knownFields(form: TemplateForm, v: FormValues, opts: Options): Set<string> {
  const s = new Set<string>(["name", "description", "labels", "team_id", "environment_id", "template_id", "template_version"]);
  for (const phase of form.phases)
    for (const job of phase.jobs) {
      s.add(`jobs.${job.name}`);
      s.add(`jobs.${job.name}.executions`);
      const kinds = attachmentKinds(job);
      (v.jobs[job.name] ?? []).forEach((_, i) => {
        s.add(execPath(job.name, i));
        for (const [name] of orderedParameters(job)) s.add(paramPath(job.name, i, name));
        if (kinds.has("address")) s.add(attachmentPath(job.name, i, "address_id"));
        if (kinds.has("ssh_key")) s.add(attachmentPath(job.name, i, "ssh_key_id"));
        if (kinds.has("node")) {
          s.add(attachmentPath(job.name, i, "proxmox_server_id"));
          s.add(attachmentPath(job.name, i, "node"));
        }
        if (kinds.has("pool")) s.add(attachmentPath(job.name, i, "pool"));
        if (kinds.has("iso")) s.add(attachmentPath(job.name, i, "iso_id"));
        if (kinds.has("nagios_host_group") && opts.nagios) {
          s.add(attachmentPath(job.name, i, "nagios"));
          s.add(attachmentPath(job.name, i, "nagios.hostgroup"));
        }
        if (kinds.has("node_exporter")) s.add(attachmentPath(job.name, i, "node_exporter"));
        if (kinds.has("startup_order")) s.add(attachmentPath(job.name, i, "startup_order"));
      });
    }
  return s;
}

/**
 * changedFields names what differs between two versions of a form's values, as field paths:
 * after a 412 the form reloads the stack and says what changed meanwhile.
 */
export function changedFields(mine: FormValues, theirs: FormValues): string[] {
  const out: string[] = [];
  for (const k of ["name", "description", "labels", "environment_id"] as const) if (mine[k] !== theirs[k]) out.push(k);
  const jobs = new Set([...Object.keys(mine.jobs), ...Object.keys(theirs.jobs)]);
  for (const job of jobs) {
    const a = mine.jobs[job] ?? [],
      b = theirs.jobs[job] ?? [];
    if (a.length !== b.length) out.push(`jobs.${job}.executions`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const names = new Set([...Object.keys(a[i].parameters), ...Object.keys(b[i].parameters)]);
      for (const n of names) if (a[i].parameters[n] !== b[i].parameters[n]) out.push(paramPath(job, i, n));
      for (const f of [
        "address_id",
        "ssh_key_id",
        "proxmox_server_id",
        "node",
        "pool",
        "iso_id",
        "nagios_hostgroup",
        "node_exporter",
        "startup_order",
      ] as const)
        if (a[i][f] !== b[i][f]) out.push(attachmentPath(job, i, f));
    }
  }
  return out;
}

/** The words a field is called by on the form, for the attachments of an execution. */
const attachmentLabels: Record<string, string> = {
  id: "the machine",
  address_id: "Address",
  ssh_key_id: "SSH key",
  proxmox_server_id: "Proxmox server",
  node: "Node",
  pool: "Resource pool",
  iso_id: "ISO",
  nagios: "Nagios host group",
  "nagios.hostgroup": "Nagios host group",
  node_exporter: "Node Exporter",
  startup_order: "Startup order",
  parameters: "parameters",
};

const headerLabels: Record<string, string> = {
  name: "Name",
  description: "Description",
  labels: "Labels",
  team_id: "Team",
  environment_id: "Environment",
  template_id: "Template",
  template_version: "Version",
  version: "Version",
};

/**
 * fieldLabel is a field path as the server names it (`jobs.app.executions[0].address_id`,
 * `labels[2]`) in the words of the form ("app #1 · Address", `Label "Web!"`), so that an error
 * listed away from its field says which field it is. A path it does not know is returned as is.
 */
export function fieldLabel(
  path: string,
  form: TemplateForm | undefined,
  v: Pick<FormValues, "jobs" | "nextIndex"> | null,
  labels: string[] = [],
): string {
  const f = path.replace(/^\//, "");
  if (headerLabels[f]) return headerLabels[f];
  const label = /^labels\[(\d+)\]$/.exec(f);
  if (label) {
    const l = labels[Number(label[1])];
    return l !== undefined ? `Label "${l}"` : `Label ${Number(label[1]) + 1}`;
  }
  const exec = /^jobs\.([^.[]+)\.executions\[(\d+)\](?:\.(.+))?$/.exec(f);
  if (exec) {
    const [, job, i, rest] = exec;
    const machine = machineLabel(job, v ? execNumber(v, job, Number(i)) : Number(i));
    if (!rest) return machine;
    const param = /^parameters\.(.+)$/.exec(rest);
    if (param) {
      const p = form?.phases.flatMap((ph) => ph.jobs).find((j) => j.name === job)?.parameters.properties?.[param[1]];
      return `${machine} · ${p?.title || param[1]}`;
    }
    return `${machine} · ${attachmentLabels[rest] ?? rest}`;
  }
  const jobs = /^jobs\.([^.[]+)(\.executions)?$/.exec(f);
  if (jobs) return jobs[2] ? `${jobs[1]}: its machines` : `Job ${jobs[1]}`;
  return f;
}

/**
 * htmlPattern is a template parameter's pattern as an input's `pattern` attribute may carry it.
 * Browsers compile the attribute with the `v` flag, which refuses what the server's regular
 * expressions accept (a `-` at either end of a class, `(`, `)`, `[`, `{`, `}`, `/`, `|` or a
 * doubled punctuator inside a class): those are escaped. undefined when it still does not
 * compile — the server checks the value anyway.
 */
export function htmlPattern(src: string | undefined): string | undefined {
  if (!src) return undefined;
  let out = "";
  let inClass = false;
  let first = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === "\\") {
      out += c + (src[i + 1] ?? "");
      i++;
      first = false;
      continue;
    }
    if (!inClass) {
      if (c === "[") {
        inClass = true;
        first = true;
        out += c;
        if (src[i + 1] === "^") {
          out += "^";
          i++;
        }
        continue;
      }
      out += c;
      continue;
    }
    if (c === "]" && !first) {
      inClass = false;
      out += c;
      continue;
    }
    const next = src[i + 1];
    const atEdge = first || next === "]";
    if (c === "-" ? atEdge : "()[]{}/|".includes(c) || (/[&!#$%*+,.:;<=>?@^`~]/.test(c) && next === c)) out += `\\${c}`;
    else out += c;
    first = false;
  }
  try {
    new RegExp(`^(?:${out})$`, "v");
    return out;
  } catch {
    return undefined;
  }
}

/** Header is the stack-wide fields of the form. */
export interface Header {
  name: string;
  team_id: string;
  environment_id: string;
}

/**
 * deployProblems is what the form can tell is missing or malformed before a deploy, on every
 * field at once (the name, and each machine's required attachments and parameters), in the
 * server's words and paths: a deploy from an empty form flags every required field, not only
 * the first the server happens to refuse. The server remains the validator.
 */
export function deployProblems(form: TemplateForm, v: FormValues, h: Header): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  if (!h.name.trim()) out.push({ field: "name", message: "is required" });
  if (!h.team_id) out.push({ field: "team_id", message: "is required" });
  if (!h.environment_id) out.push({ field: "environment_id", message: "is required" });
  const attachmentFields: Record<string, [keyof ExecValues, string][]> = {
    address: [["address_id", "is required: every machine needs an address"]],
    ssh_key: [["ssh_key_id", "is required: pick the SSH key to install"]],
    node: [
      ["proxmox_server_id", "is required"],
      ["node", "is required"],
    ],
    pool: [["pool", "is required"]],
    iso: [["iso_id", "is required: this job installs from an ISO"]],
  };
  for (const phase of form.phases)
    for (const job of phase.jobs) {
      const required = new Set(job.parameters.required ?? []);
      (v.jobs[job.name] ?? []).forEach((e, i) => {
        for (const [name, p] of orderedParameters(job)) {
          const val = e.parameters[name];
          if (val === "" || val === undefined) {
            if (required.has(name) && !(isSecret(p) && (p["x-horizon-generate"] || e.id)))
              out.push({ field: paramPath(job.name, i, name), message: "is required" });
            continue;
          }
          const pat = typeof val === "string" ? htmlPattern(p.pattern) : undefined;
          if (pat && !new RegExp(`^(?:${pat})$`, "v").test(val as string))
            out.push({
              field: paramPath(job.name, i, name),
              message: p.description ? `is not in the expected format: ${p.description}` : "is not in the expected format",
            });
        }
        for (const a of job.attachments) {
          if (!a.required) continue;
          for (const [field, message] of attachmentFields[a.kind] ?? [])
            if (!e[field]) out.push({ field: attachmentPath(job.name, i, field), message });
        }
      });
    }
  return out;
}
