// ResourceForm: the one form of the catalogue and people screens. Fields are described, not
// drawn by hand; the API's problems (422 problem+json) appear on the field they name, those no
// field shows above the buttons; nothing is kept on failure but what was typed.
import { useId, useState } from "react";
import { ApiError } from "../api/client";
import { FieldErrorList } from "../form/FormRenderer";
import { errorsFor, fieldErrors, unplaced } from "../form/model";
import { ProblemBox } from "./common";

export interface FieldSpec {
  name: string;
  label: string;
  kind?: "text" | "textarea" | "secret" | "number" | "select" | "multi" | "checkbox";
  required?: boolean;
  hint?: string;
  placeholder?: string;
  /** The choices of a select or multi; a function of the values for choices that depend on
   * another field (a server's nodes): a choice that goes away is cleared. */
  options?: Option[] | ((v: Values) => Option[]);
}

export type Option = { value: string; label: string };
export type Values = Record<string, string | string[] | boolean>;

/** optionsOf is a field's choices for the values v. */
export function optionsOf(f: FieldSpec, v: Values): Option[] {
  return (typeof f.options === "function" ? f.options(v) : f.options) ?? [];
}

/** withValue sets field name to x and clears the choices of other fields that x took away. */
export function withValue(fields: FieldSpec[], v: Values, name: string, x: string | string[] | boolean): Values {
  const next = { ...v, [name]: x };
  for (const f of fields) {
    if (f.name === name || typeof f.options !== "function") continue;
    const ok = new Set(optionsOf(f, next).map((o) => o.value));
    const cur = next[f.name];
    if (Array.isArray(cur)) next[f.name] = cur.filter((c) => ok.has(c));
    else if (typeof cur === "string" && cur !== "" && !ok.has(cur)) next[f.name] = "";
  }
  return next;
}

/** ResourceFormProps are a ResourceForm's: its fields, what Save sends, and what follows. */
export type ResourceFormProps = {
  title: string;
  fields: FieldSpec[];
  submit: (v: Values) => Promise<unknown>;
  initial?: Values;
  onDone?: (result: unknown) => void;
  onCancel?: () => void;
  submitLabel?: string;
};

export function ResourceForm({ title, fields, submit, initial, onDone, onCancel, submitLabel = "Save" }: ResourceFormProps) {
  const base = useId();
  const empty = (f: FieldSpec) => (f.kind === "multi" ? [] : f.kind === "checkbox" ? false : "");
  const [v, setV] = useState<Values>(() => Object.fromEntries(fields.map((f) => [f.name, initial?.[f.name] ?? empty(f)])));
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const errs = fieldErrors(err instanceof ApiError && err.status === 422 ? err.problem.errors : []);
  const others = unplaced(errs, new Set(fields.map((f) => f.name)));
  return (
    <form
      className="resource-form"
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        setErr(null);
        setBusy(true);
        try {
          const r = await submit(v);
          onDone?.(r);
        } catch (x) {
          setErr(x);
        } finally {
          setBusy(false);
        }
      }}
    >
      <fieldset>
        <legend>{title}</legend>
        <div className="grid">
          {fields.map((f) => {
            const id = `${base}-${f.name}`;
            const msgs = [
              ...errorsFor(errs, f.name),
              ...[...errs.keys()].filter((k) => k.startsWith(`${f.name}.`) || k.startsWith(`${f.name}[`)).flatMap((k) => errs.get(k)!),
            ];
            const val = v[f.name];
            const set = (x: string | string[] | boolean) => setV(withValue(fields, v, f.name, x));
            const options = optionsOf(f, v);
            const common = { id, "aria-invalid": msgs.length > 0, "aria-describedby": f.hint ? `${id}-hint` : undefined };
            return (
              <div
                key={f.name}
                className={`field${msgs.length ? " has-error" : ""}${f.kind === "textarea" || f.kind === "multi" ? " wide" : ""}`}
              >
                {f.kind === "multi" ? (
                  <span className="group-label" id={`${id}-label`}>
                    {f.label}
                    {f.required ? " *" : ""}
                  </span>
                ) : (
                  <label htmlFor={id}>
                    {f.label}
                    {f.required ? " *" : ""}
                  </label>
                )}
                {f.kind === "textarea" ? (
                  <textarea {...common} rows={4} value={String(val)} placeholder={f.placeholder} onChange={(e) => set(e.target.value)} />
                ) : f.kind === "select" ? (
                  <select {...common} value={String(val)} onChange={(e) => set(e.target.value)}>
                    <option value="">{f.required ? "Choose…" : "none"}</option>
                    {options.map((o) => (
                      <option key={o.value} value={o.value}>
                        {o.label}
                      </option>
                    ))}
                  </select>
                ) : f.kind === "multi" ? (
                  <div
                    id={id}
                    role="group"
                    aria-labelledby={`${id}-label`}
                    aria-describedby={common["aria-describedby"]}
                    className="checks"
                  >
                    {options.length ? (
                      options.map((o) => (
                        <label key={o.value}>
                          <input
                            type="checkbox"
                            checked={(val as string[]).includes(o.value)}
                            onChange={(e) =>
                              set(e.target.checked ? [...(val as string[]), o.value] : (val as string[]).filter((x) => x !== o.value))
                            }
                          />{" "}
                          {o.label}
                        </label>
                      ))
                    ) : (
                      <span className="muted">none to choose from</span>
                    )}
                  </div>
                ) : f.kind === "checkbox" ? (
                  <input {...common} type="checkbox" checked={val === true} onChange={(e) => set(e.target.checked)} />
                ) : (
                  <input
                    {...common}
                    type={f.kind === "secret" ? "password" : f.kind === "number" ? "number" : "text"}
                    autoComplete={f.kind === "secret" ? "new-password" : "off"}
                    value={String(val)}
                    placeholder={f.placeholder}
                    onChange={(e) => set(e.target.value)}
                  />
                )}
                {f.hint && (
                  <span className="hint" id={`${id}-hint`}>
                    {f.hint}
                  </span>
                )}
                <FieldErrorList msgs={msgs} />
              </div>
            );
          })}
        </div>
        {others.length > 0 && (
          <div className="problem" role="alert">
            <ul>
              {others.map((o, i) => (
                <li key={i}>
                  <code>{o.field}</code>: {o.message}
                </li>
              ))}
            </ul>
          </div>
        )}
        {!(err instanceof ApiError && err.status === 422) && <ProblemBox error={err} />}
        {err instanceof ApiError && err.status === 422 && others.length === 0 && (
          <p className="field-errors" role="alert">
            {err.problem.detail ?? err.problem.title}
          </p>
        )}
        <div className="actions">
          <button type="submit" className="primary" disabled={busy}>
            {busy ? "Saving…" : submitLabel}
          </button>
          {onCancel && (
            <button type="button" onClick={onCancel}>
              Cancel
            </button>
          )}
        </div>
      </fieldset>
    </form>
  );
}

/** str, list, opt turn a form's values into a request's fields. */
export const str = (v: Values, k: string) => String(v[k] ?? "").trim();
export const opt = (v: Values, k: string) => str(v, k) || undefined;
export const list = (v: Values, k: string) =>
  Array.isArray(v[k])
    ? (v[k] as string[])
    : str(v, k)
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
/** given is the named text fields that were filled, to send only those. */
export function given(v: Values, ...keys: string[]): Record<string, string> {
  return Object.fromEntries(keys.filter((k) => str(v, k) !== "").map((k) => [k, str(v, k)]));
}

/** changed is the named text fields whose value differs from initial (a secret left blank is
 * unchanged), to send only those in a PATCH. */
export function changed(v: Values, initial: Values, ...keys: string[]): Record<string, string> {
  return Object.fromEntries(
    keys.filter((k) => str(v, k) !== str(initial, k) && (str(v, k) !== "" || str(initial, k) !== "")).map((k) => [k, str(v, k)]),
  );
}

/**
 * Adder is the "Add …" button that opens a ResourceForm in place, titled label unless title
 * says otherwise. The form closes when cancelled or once its submit succeeded, before onDone
 * is called with the API's answer.
 */
export function Adder({
  label,
  title = label,
  onDone,
  ...form
}: { label: string; title?: string } & Omit<ResourceFormProps, "title" | "onCancel">) {
  const [open, setOpen] = useState(false);
  return open ? (
    <ResourceForm
      title={title}
      {...form}
      onCancel={() => setOpen(false)}
      onDone={(r) => {
        setOpen(false);
        onDone?.(r);
      }}
    />
  ) : (
    <p>
      <button type="button" className="primary" onClick={() => setOpen(true)}>
        {label}
      </button>
    </p>
  );
}

/** Delete asks once, then deletes (or revokes); the API's refusal (in use, not free) is shown beside it. */
export function Delete({
  what,
  run,
  onDone,
  verb = "Delete",
}: {
  what: string;
  run: () => Promise<unknown>;
  onDone: () => void;
  verb?: string;
}) {
  const [ask, setAsk] = useState(false);
  const [err, setErr] = useState<unknown>(null);
  return (
    <span className="delete">
      {ask ? (
        <>
          <button
            type="button"
            className="danger"
            onClick={async () => {
              setErr(null);
              try {
                await run();
                onDone();
              } catch (e) {
                setErr(e);
              }
              setAsk(false);
            }}
          >
            Yes, {verb.toLowerCase()} {what}
          </button>{" "}
          <button type="button" onClick={() => setAsk(false)}>
            No
          </button>
        </>
      ) : (
        <button type="button" className="link" onClick={() => setAsk(true)} aria-label={`${verb} ${what}`}>
          {verb}
        </button>
      )}
      <ProblemBox error={err} />
    </span>
  );
}
