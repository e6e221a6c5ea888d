// FormRenderer draws a template version's form schema: one section per phase, one block per job,
// one sub-block per execution with its parameters and attachments. Errors the server returned
// are shown on the field they name; those no field shows are listed at the top by the caller.
import { useId } from "react";
import type { FormJob, FormParameter, TemplateForm } from "../api/client";
import {
  addExecution,
  attachmentKinds,
  attachmentPath,
  canAdd,
  canRemove,
  errorsFor,
  execNumber,
  type ExecValues,
  type FieldErrors,
  type FormValues,
  generateSecret,
  htmlPattern,
  isSecret,
  type Option,
  type Options,
  orderedParameters,
  paramPath,
  preselectOnServer,
  removeExecution,
} from "./model";
import { machineLabel } from "../numbering";

interface Props {
  form: TemplateForm;
  values: FormValues;
  onChange: (v: FormValues) => void;
  options: Options;
  errors: FieldErrors;
}

export function FormRenderer({ form, values, onChange, options, errors }: Props) {
  return (
    <div className="form-phases">
      {form.phases.map((phase, pi) => (
        <section key={phase.name} className="phase" aria-label={`Phase ${pi + 1}: ${phase.name}`}>
          <h3>
            <span className="phase-no">Phase {pi + 1}</span> {phase.name}
          </h3>
          {phase.jobs.map((job) => (
            <JobBlock key={job.name} job={job} values={values} onChange={onChange} options={options} errors={errors} />
          ))}
        </section>
      ))}
    </div>
  );
}

function JobBlock({ job, values, onChange, options, errors }: Omit<Props, "form"> & { job: FormJob }) {
  const execs = values.jobs[job.name] ?? [];
  const setExec = (i: number, e: ExecValues) =>
    onChange({ ...values, jobs: { ...values.jobs, [job.name]: execs.map((x, j) => (j === i ? e : x)) } });
  const jobErrs = errorsFor(errors, `jobs.${job.name}.executions`).concat(errorsFor(errors, `jobs.${job.name}`));
  const noun = job.machine ? "machine" : "execution";
  return (
    <fieldset className="job" data-job={job.name}>
      <legend>
        {job.name}
        {job.description ? <span className="muted"> — {job.description}</span> : null}
      </legend>
      {job.depends_on.length > 0 && <p className="muted small">Uses the outputs of {job.depends_on.join(", ")}.</p>}
      <FieldErrorList msgs={jobErrs} />
      {execs.map((e, i) => (
        <div className="exec" key={e.id ?? i} data-exec={i}>
          {(job.executions.multiple || execs.length > 1) && (
            <div className="exec-head">
              <h4>{machineLabel(job.name, execNumber(values, job.name, i))}</h4>
              {canRemove(job, execs.length) && (
                <button type="button" className="link" onClick={() => onChange(removeExecution(values, job, i))}>
                  Remove {machineLabel(job.name, execNumber(values, job.name, i))}
                </button>
              )}
            </div>
          )}
          <FieldErrorList msgs={errorsFor(errors, `jobs.${job.name}.executions[${i}]`)} />
          <div className="grid">
            {orderedParameters(job).map(([name, p]) => (
              <ParamInput
                key={name}
                name={name}
                p={p}
                required={job.parameters.required?.includes(name) ?? false}
                value={e.parameters[name] ?? ""}
                onChange={(val) => setExec(i, { ...e, parameters: { ...e.parameters, [name]: val } })}
                errors={errorsFor(errors, paramPath(job.name, i, name))}
              />
            ))}
            <Attachments job={job} i={i} e={e} set={(x) => setExec(i, x)} options={options} errors={errors} />
          </div>
        </div>
      ))}
      {job.executions.multiple && (
        <p className="small muted">
          {execs.length} of {job.executions.min}–{job.executions.max}{" "}
          {canAdd(job, execs.length) && (
            <button type="button" onClick={() => onChange(addExecution(values, job, options))}>
              Add {noun} to {job.name}
            </button>
          )}
        </p>
      )}
    </fieldset>
  );
}

export function FieldErrorList({ msgs, id }: { msgs: string[]; id?: string }) {
  if (!msgs.length) return null;
  return (
    <div className="field-errors" id={id} role="alert">
      {msgs.map((m, i) => (
        <div key={i}>{m}</div>
      ))}
    </div>
  );
}

function Field({
  label,
  errors,
  children,
  hint,
}: {
  label: string;
  errors: string[];
  hint?: string;
  children: (id: string, describedBy?: string) => React.ReactNode;
}) {
  const id = useId();
  const errId = errors.length ? `${id}-err` : undefined;
  return (
    <div className={errors.length ? "field has-error" : "field"}>
      <label htmlFor={id}>{label}</label>
      {children(id, errId)}
      {hint && <span className="hint">{hint}</span>}
      <FieldErrorList msgs={errors} id={errId} />
    </div>
  );
}

export function ParamInput({
  name,
  p,
  value,
  onChange,
  errors,
  required,
}: {
  name: string;
  p: FormParameter;
  value: string | number | boolean;
  onChange: (v: string | number | boolean) => void;
  errors: string[];
  required: boolean;
}) {
  const label = (p.title || name) + (required ? " *" : "");
  const bounds = p.minimum !== undefined || p.maximum !== undefined ? `${p.minimum ?? "…"} to ${p.maximum ?? "…"}` : undefined;
  const hint = [p.description, bounds].filter(Boolean).join(" · ") || undefined;
  if (p.type === "boolean")
    return (
      <Field label={label} errors={errors} hint={p.description}>
        {(id, d) => (
          <input id={id} type="checkbox" checked={value === true} aria-describedby={d} onChange={(e) => onChange(e.target.checked)} />
        )}
      </Field>
    );
  if (p.enum)
    return (
      <Field label={label} errors={errors} hint={p.description}>
        {(id, d) => (
          <select
            id={id}
            aria-describedby={d}
            aria-invalid={errors.length > 0}
            value={String(value)}
            onChange={(e) => {
              const opt = p.enum!.find((x) => String(x) === e.target.value);
              onChange(opt === undefined ? "" : opt);
            }}
          >
            {p.enum!.length !== 1 && <option value="">Choose…</option>}
            {p.enum!.map((x) => (
              <option key={String(x)} value={String(x)}>
                {String(x)}
              </option>
            ))}
          </select>
        )}
      </Field>
    );
  if (isSecret(p))
    return (
      <Field label={label} errors={errors} hint={p["x-horizon-generate"] ? "Left empty, Horizon generates one" : p.description}>
        {(id, d) => (
          <span className="row">
            <input
              id={id}
              type="password"
              autoComplete="new-password"
              aria-describedby={d}
              aria-invalid={errors.length > 0}
              value={String(value)}
              onChange={(e) => onChange(e.target.value)}
            />
            {p["x-horizon-generate"] && (
              <button type="button" onClick={() => onChange(generateSecret())} aria-label={`Generate ${p.title || name}`}>
                Generate
              </button>
            )}
          </span>
        )}
      </Field>
    );
  const numeric = p.type === "integer" || p.type === "number";
  return (
    <Field label={label} errors={errors} hint={hint}>
      {(id, d) => (
        <input
          id={id}
          type={numeric ? "number" : "text"}
          step={p.type === "integer" ? 1 : numeric ? "any" : undefined}
          min={p.minimum}
          max={p.maximum}
          pattern={htmlPattern(p.pattern)}
          aria-describedby={d}
          aria-invalid={errors.length > 0}
          value={String(value)}
          onChange={(e) => onChange(e.target.value)}
        />
      )}
    </Field>
  );
}

function Select({
  label,
  value,
  options,
  onChange,
  errors,
  required,
}: {
  label: string;
  value: string;
  options: Option[];
  onChange: (v: string) => void;
  errors: string[];
  required?: boolean;
}) {
  return (
    <Field label={label + (required ? " *" : "")} errors={errors}>
      {(id, d) => (
        <select id={id} value={value} aria-describedby={d} aria-invalid={errors.length > 0} onChange={(e) => onChange(e.target.value)}>
          {!(options.length === 1 && value === options[0].value) && <option value="">Choose…</option>}
          {options.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

function Attachments({
  job,
  i,
  e,
  set,
  options,
  errors,
}: {
  job: FormJob;
  i: number;
  e: ExecValues;
  set: (e: ExecValues) => void;
  options: Options;
  errors: FieldErrors;
}) {
  const kinds = attachmentKinds(job);
  const req = (k: string) => job.attachments.find((a) => a.kind === k)?.required ?? false;
  const errs = (f: string) => errorsFor(errors, attachmentPath(job.name, i, f));
  const server = options.servers.find((s) => s.value === e.proxmox_server_id);
  const toOpts = (xs: string[]) => xs.map((x) => ({ value: x, label: x }));
  return (
    <>
      {kinds.has("address") && (
        <Select
          label="Address"
          required={req("address")}
          value={e.address_id}
          options={options.addresses}
          errors={errs("address_id")}
          onChange={(v) => set({ ...e, address_id: v })}
        />
      )}
      {kinds.has("ssh_key") && (
        <Select
          label="SSH key"
          required={req("ssh_key")}
          value={e.ssh_key_id}
          options={options.sshKeys}
          errors={errs("ssh_key_id")}
          onChange={(v) => set({ ...e, ssh_key_id: v })}
        />
      )}
      {kinds.has("ssh_key") && options.sshKeys.length === 0 && (
        <p className="hint" data-empty="ssh_key">
          No SSH key is registered yet. <a href="#/catalogue/ssh-keys">Add an SSH key</a> (save a draft first to keep what you typed here).
        </p>
      )}
      {kinds.has("node") && (
        <>
          <Select
            label="Proxmox server"
            required={req("node")}
            value={e.proxmox_server_id}
            options={options.servers}
            errors={errs("proxmox_server_id")}
            onChange={(v) => {
              const x = { ...e, proxmox_server_id: v };
              preselectOnServer(x, options);
              set(x);
            }}
          />
          <Select
            label="Node"
            required={req("node")}
            value={e.node}
            options={toOpts(server?.nodes ?? [])}
            errors={errs("node")}
            onChange={(v) => set({ ...e, node: v })}
          />
        </>
      )}
      {kinds.has("pool") && (
        <Select
          label="Resource pool"
          required={req("pool")}
          value={e.pool}
          options={toOpts(server?.pools ?? [])}
          errors={errs("pool")}
          onChange={(v) => set({ ...e, pool: v })}
        />
      )}
      {kinds.has("iso") && (
        <Select
          label="ISO"
          required={req("iso")}
          value={e.iso_id}
          options={options.isos}
          errors={errs("iso_id")}
          onChange={(v) => set({ ...e, iso_id: v })}
        />
      )}
      {kinds.has("iso") && options.isos.length === 0 && (
        <p className="hint" data-empty="iso">
          No ISO is built yet. <a href="#/isos">Build one on the ISOs page</a> from an ISO template (admins register ISO templates with POST
          /v1/iso-templates).
        </p>
      )}
      {kinds.has("nagios_host_group") && options.nagios && (
        <Field label="Nagios host group" errors={errs("nagios").concat(errs("nagios.hostgroup"))}>
          {(id, d) => (
            // Suggestions, not a closed list: Nagios's host group list leaves out empty groups,
            // so any name may be typed; the server checks it before a deploy.
            <>
              <input
                id={id}
                aria-describedby={d}
                list={`${id}-groups`}
                value={e.nagios_hostgroup}
                onChange={(x) => set({ ...e, nagios_hostgroup: x.target.value })}
              />
              <datalist id={`${id}-groups`}>
                {options.hostgroups.map((g) => (
                  <option key={g} value={g} />
                ))}
              </datalist>
            </>
          )}
        </Field>
      )}
      {kinds.has("node_exporter") && (
        <Field label="Node Exporter" errors={errs("node_exporter")}>
          {(id, d) => (
            <input
              id={id}
              type="checkbox"
              aria-describedby={d}
              checked={e.node_exporter}
              onChange={(x) => set({ ...e, node_exporter: x.target.checked })}
            />
          )}
        </Field>
      )}
      {kinds.has("startup_order") && (
        <Field label="Startup order" errors={errs("startup_order")}>
          {(id, d) => (
            <input
              id={id}
              type="number"
              step={1}
              aria-describedby={d}
              value={e.startup_order}
              onChange={(x) => set({ ...e, startup_order: x.target.value })}
            />
          )}
        </Field>
      )}
    </>
  );
}
