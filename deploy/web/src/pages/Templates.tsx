// Templates: the list (admins add one from its definition), and one template: its versions,
// a version's definition with the commits it pinned, what changed from any other version (the
// one before it unless ?from= picks another: definitionChanges) and whether the template moved
// since (GET …/changes: a new definition or a branch that moved), and its form as a stack's creator sees it (FormRenderer, not saved).
// Admins add a template or a version (the definition read from a git branch's file, or pasted
// as YAML or JSON; the API resolves every branch to a commit) and switch a template on or off.
import { templatesKey } from "../api/queries/lookups";
import { formQuery, templateKey, templateQuery, versionChangesQuery, versionQuery } from "../api/queries/templates";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api, ApiError, call, type TemplateForm } from "../api/client";
import { useMe } from "../api/queries/me";
import { FieldErrorList, FormRenderer } from "../form/FormRenderer";
import { emptyOptions, fieldErrors, initialValues, type FormValues } from "../form/model";
import { href, navigate, useRoute } from "../router";
import { compareWith, definitionChanges } from "../templates/diff";
import { Head, plural, ProblemBox, when } from "./common";
import { useTemplates } from "./lookups";

export function TemplatesList() {
  const templates = useTemplates();
  const me = useMe();
  const [adding, setAdding] = useState(false);
  return (
    <>
      <div className="page-head">
        <h1>Templates</h1>
        {me.data?.role === "admin" && !adding && (
          <button type="button" className="primary" onClick={() => setAdding(true)}>
            New template
          </button>
        )}
      </div>
      {adding && (
        <DefinitionForm
          title="New template"
          submit="Create template"
          initial=""
          onCancel={() => setAdding(false)}
          onSubmit={async (body) => {
            const t = await call(api.POST("/v1/templates", { body: { ...body, active: true } }));
            navigate(`/templates/${t.id}`);
          }}
        />
      )}
      <ProblemBox error={templates.error} />
      {templates.isLoading ? (
        <p>Loading…</p>
      ) : (
        <table>
          <Head cols={["Name", "Description", "Latest version", "New stacks", "Changed"]} />
          <tbody>
            {templates.data?.items.map((t) => (
              <tr key={t.id} data-template={t.name}>
                <td>
                  <a href={href(`/templates/${t.id}`)}>{t.name}</a>
                </td>
                <td>{t.description}</td>
                <td>v{t.latest_version}</td>
                <td>{t.active ? "allowed" : <span className="muted">inactive</span>}</td>
                <td>{when(t.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

export function TemplateDetail({ id }: { id: string }) {
  const qc = useQueryClient();
  const me = useMe();
  const admin = me.data?.role === "admin";
  const { query } = useRoute();
  const detail = useQuery(templateQuery(id));
  const t = detail.data?.t;
  const v = Number(query.get("v")) || t?.latest_version || 0;
  const from = compareWith(
    (t?.versions ?? []).map((x) => x.number),
    v,
    Number(query.get("from")),
  );
  const cur = useQuery(versionQuery(id, v));
  const changes = useQuery(versionChangesQuery(id, v));
  const [adding, setAdding] = useState(false);
  const [err, setErr] = useState<unknown>(null);
  if (detail.isLoading) return <p>Loading…</p>;
  if (!t) return <ProblemBox error={detail.error} />;
  const refresh = () =>
    void qc.invalidateQueries({ queryKey: templateKey(id) }).then(() => qc.invalidateQueries({ queryKey: templatesKey }));
  return (
    <>
      <div className="page-head">
        <h1>
          {t.name} <span className="state">{t.active ? "active" : "inactive"}</span>
        </h1>
        {admin && (
          <div className="actions">
            {!adding && (
              <button type="button" className="primary" onClick={() => setAdding(true)}>
                New version
              </button>
            )}
            <button
              type="button"
              onClick={async () => {
                setErr(null);
                try {
                  await call(
                    api.PATCH("/v1/templates/{id}", {
                      params: { path: { id }, header: { "If-Match": detail.data!.etag } },
                      body: { active: !t.active },
                    }),
                  );
                } catch (e) {
                  setErr(e);
                }
                refresh();
              }}
            >
              {t.active ? "Deactivate (no new stacks)" : "Activate"}
            </button>
          </div>
        )}
      </div>
      <ProblemBox error={err} />
      {t.description && <p>{t.description}</p>}
      {adding && (
        <DefinitionForm
          title={`New version of ${t.name}`}
          submit="Create version"
          hint="Each job's branch is resolved to the commit it points to now, and its Terraform module inspected."
          initial={cur.data ? JSON.stringify(cur.data.definition, null, 2) : ""}
          onCancel={() => setAdding(false)}
          initialRepo={cur.data?.definition.phases[0]?.jobs[0]?.source.repo}
          onSubmit={async (body) => {
            const nv = await call(
              api.POST("/v1/templates/{id}/versions", {
                params: { path: { id }, header: { "If-Match": detail.data!.etag } },
                body,
              }),
            );
            setAdding(false);
            refresh();
            navigate(`/templates/${id}`, { v: String(nv.number) });
          }}
        />
      )}
      <div className="split">
        <table className="versions">
          <caption>Versions</caption>
          <Head cols={["Version", "Made"]} />
          <tbody>
            {[...t.versions]
              .sort((a, b) => b.number - a.number)
              .map((x) => (
                <tr key={x.number} aria-current={x.number === v ? "true" : undefined} className={x.number === v ? "current" : undefined}>
                  <td>
                    <a href={href(`/templates/${id}`, { v: String(x.number) })}>v{x.number}</a>
                    {x.number === t.latest_version && " (latest)"}
                  </td>
                  <td>{when(x.created_at)}</td>
                </tr>
              ))}
          </tbody>
        </table>
        <div className="version">
          <h2>Version {v}</h2>
          <ProblemBox error={cur.error} />
          <h3>Changes from v{from}</h3>
          {t.versions.length <= 1 ? (
            <p className="muted">The first version.</p>
          ) : (
            <>
              <label>
                Compare with{" "}
                <select value={from} onChange={(e) => navigate(`/templates/${id}`, { v: String(v), from: e.target.value }, true)}>
                  {[...t.versions]
                    .sort((a, b) => b.number - a.number)
                    .filter((x) => x.number !== v)
                    .map((x) => (
                      <option key={x.number} value={x.number}>
                        v{x.number}
                      </option>
                    ))}
                </select>
              </label>
              {from > 0 && <VersionChanges templateId={id} from={from} to={v} />}
            </>
          )}
          <h3>Since this version</h3>
          {changes.data ? (
            <>
              <p>
                {changes.data.changed
                  ? changes.data.definition_changed
                    ? `The definition changed: the latest version is v${changes.data.latest_version}.`
                    : "A branch moved: a new version would pin newer commits."
                  : "Nothing changed: the branches still point to the commits it pinned."}
              </p>
              <table>
                <Head cols={["Job or action", "Source", "Pinned", "Branch now"]} />
                <tbody>
                  {changes.data.sources.map((s, i) => (
                    <tr key={i}>
                      <td>{s.job ?? `action ${s.action}`}</td>
                      <td>
                        <code>{s.repo}</code> {s.branch}
                      </td>
                      <td>
                        <code>{s.pinned_commit.slice(0, 10) || "—"}</code>
                      </td>
                      <td>
                        <code>{s.current_commit.slice(0, 10) || "—"}</code> {s.changed && <strong>moved</strong>}{" "}
                        {s.error && <span className="field-errors">{s.error}</span>}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          ) : (
            <ProblemBox error={changes.error} />
          )}
          <h3>Definition</h3>
          {cur.data && (
            <>
              {cur.data.definition.phases.map((p, i) => (
                <section key={p.name} className="phase" aria-label={`Definition phase ${i + 1}: ${p.name}`}>
                  <strong>
                    <span className="phase-no">Phase {i + 1}</span> {p.name}
                  </strong>
                  <ul>
                    {p.jobs.map((j) => (
                      <li key={j.name}>
                        <strong>{j.name}</strong> {j.machine && <span className="label">machine</span>} — <code>{j.source.repo}</code>{" "}
                        {j.source.branch}
                        {j.source.path && (
                          <>
                            {" "}
                            <code>{j.source.path}</code>
                          </>
                        )}{" "}
                        at <code title={cur.data.commits.jobs[j.name]}>{(cur.data.commits.jobs[j.name] ?? "").slice(0, 10)}</code>
                        {(j.parameters ?? []).length > 0 && (
                          <div className="small muted">Parameters: {(j.parameters ?? []).map((x) => x.name).join(", ")}</div>
                        )}
                      </li>
                    ))}
                  </ul>
                </section>
              ))}
              {(cur.data.definition.actions ?? []).length > 0 && (
                <p>Actions: {(cur.data.definition.actions ?? []).map((a) => a.name).join(", ")}</p>
              )}
              <details>
                <summary>The whole definition (JSON)</summary>
                <pre className="definition">{JSON.stringify(cur.data.definition, null, 2)}</pre>
              </details>
            </>
          )}
          <h3>Form preview</h3>
          <FormPreview id={id} v={v} />
        </div>
      </div>
    </>
  );
}

/** VersionChanges lists what changes from one version of a template to another. */
export function VersionChanges({ templateId, from, to }: { templateId: string; from: number; to: number }) {
  const a = useQuery(versionQuery(templateId, from));
  const b = useQuery(versionQuery(templateId, to));
  if (a.error || b.error) return <ProblemBox error={a.error ?? b.error} />;
  if (!a.data || !b.data) return <p>Loading…</p>;
  const diff = definitionChanges(a.data.definition, b.data.definition);
  if (diff.length === 0) return <p className="muted">Same definition; only the pinned commits may differ.</p>;
  return (
    <ul className="changes" aria-label={`Changes from v${from} to v${to}`}>
      {diff.map((c) => (
        <li key={c.subject} data-change={c.subject}>
          <span className={`pbadge pbadge-${c.kind === "added" ? "create" : c.kind === "removed" ? "destroy" : "reapply"}`}>{c.kind}</span>{" "}
          {c.subject}
          {c.details.length > 0 && (
            <ul>
              {c.details.map((d) => (
                <li key={d}>{d}</li>
              ))}
            </ul>
          )}
        </li>
      ))}
    </ul>
  );
}

/** FormPreview draws a version's form as a stack's creator sees it; nothing is saved. */
function FormPreview({ id, v }: { id: string; v: number }) {
  const form = useQuery(formQuery(id, v));
  const [values, setValues] = useState<FormValues | null>(null);
  useEffect(() => {
    if (form.data) setValues(initialValues(form.data as TemplateForm, emptyOptions));
  }, [form.data]);
  if (form.error) return <ProblemBox error={form.error} />;
  if (!form.data || !values) return <p>Loading…</p>;
  return (
    <div className="preview" role="region" aria-label="Form preview">
      <p className="muted small">A preview: attachments list no options here, and nothing is saved.</p>
      <FormRenderer form={form.data} values={values} onChange={setValues} options={emptyOptions} errors={fieldErrors([])} />
    </div>
  );
}

/** What a new template or version is made from: a pasted definition, or a file of a git branch. */
export type DefinitionBody = { definition: string } | { source: { repo: string; branch: string; path: string } };

/**
 * DefinitionForm takes a template definition, pasted (YAML or JSON) or read from a git branch's
 * file, and shows the API's problems by path (source.repo, definition.phases[0]…).
 */
function DefinitionForm(props: {
  title: string;
  submit: string;
  hint?: string;
  initial: string;
  initialRepo?: string;
  onCancel: () => void;
  onSubmit: (body: DefinitionBody) => Promise<void>;
}) {
  const [mode, setMode] = useState<"git" | "paste">("git");
  const [text, setText] = useState(props.initial);
  const [src, setSrc] = useState({ repo: props.initialRepo ?? "", branch: "main", path: "template.yaml" });
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const errs = err instanceof ApiError && err.status === 422 ? (err.problem.errors ?? []) : [];
  const on = (f: string) => errs.filter((e) => e.field === f).map((e) => e.message);
  const others = errs.filter((e) => !["source.repo", "source.branch", "source.path"].includes(e.field));
  const srcField = (f: "repo" | "branch" | "path", label: string, hint?: string) => (
    <div className={`field${on(`source.${f}`).length ? " has-error" : ""}`}>
      <label htmlFor={`f-source-${f}`}>{label}</label>
      <input
        id={`f-source-${f}`}
        value={src[f]}
        aria-invalid={on(`source.${f}`).length > 0}
        onChange={(e) => setSrc({ ...src, [f]: e.target.value })}
      />
      {hint && <span className="hint">{hint}</span>}
      <FieldErrorList msgs={on(`source.${f}`)} />
    </div>
  );
  return (
    <form
      className="definition-form"
      onSubmit={async (e) => {
        e.preventDefault();
        setErr(null);
        setBusy(true);
        try {
          await props.onSubmit(
            mode === "paste"
              ? { definition: text }
              : { source: { repo: src.repo.trim(), branch: src.branch.trim(), path: src.path.trim() || "template.yaml" } },
          );
        } catch (x) {
          setErr(x);
        } finally {
          setBusy(false);
        }
      }}
    >
      <fieldset>
        <legend>{props.title}</legend>
        <div role="radiogroup" aria-label="The definition comes" className="actions">
          <label>
            <input type="radio" name="def-mode" checked={mode === "git"} onChange={() => setMode("git")} /> from a file in git
          </label>
          <label>
            <input type="radio" name="def-mode" checked={mode === "paste"} onChange={() => setMode("paste")} /> pasted here
          </label>
        </div>
        {mode === "git" ? (
          <div className="grid">
            {srcField("repo", "Repository *", "Credentials are the registered git credential whose URL prefix matches.")}
            {srcField("branch", "Branch *")}
            {srcField("path", "Path", "The definition file in the repository")}
          </div>
        ) : (
          <div className="field">
            <label htmlFor="f-definition">Definition (YAML or JSON) *</label>
            <textarea
              id="f-definition"
              rows={16}
              value={text}
              onChange={(e) => setText(e.target.value)}
              aria-invalid={errs.length > 0}
              aria-describedby="f-definition-hint"
            />
            <span className="hint" id="f-definition-hint">
              {props.hint ?? "The template document; see the template authors' guide."}
            </span>
          </div>
        )}
        {others.length > 0 && (
          <div className="problem" role="alert">
            <strong>The definition has {plural(others.length, "problem")}:</strong>
            <ul>
              {others.map((x, i) => (
                <li key={i}>
                  <code>{x.field}</code>: {x.message}
                </li>
              ))}
            </ul>
          </div>
        )}
        {!errs.length && <ProblemBox error={err} />}
        <div className="actions">
          <button type="submit" className="primary" disabled={busy || (mode === "paste" ? !text.trim() : !src.repo.trim())}>
            {busy ? "Checking the sources…" : props.submit}
          </button>
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        </div>
      </fieldset>
    </form>
  );
}
