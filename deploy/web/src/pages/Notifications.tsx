// Notifications: the webhook subscriptions the user sees (their teams'; admins also the global
// ones), each with its last delivery and, on demand, its delivery log. Members and admins add,
// change, enable, test, rotate and delete them; viewers (and tokens narrower than full) read
// only, as the API decides. A signing secret is shown once, in the dialog that follows a create
// or a rotation, and is dropped with it: it is never put in the query cache.
import { deliveriesQuery, webhookKey, webhooksKey, webhooksQuery } from "../api/queries/people";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api, ApiError, call, type Schemas } from "../api/client";
import { useMe } from "../api/queries/me";
import { FieldErrorList } from "../form/FormRenderer";
import { errorsFor, fieldErrors } from "../form/model";
import {
  createBody,
  deliveryStatus,
  editValues,
  eventLabel,
  EVENTS,
  firstBytes,
  GLOBAL,
  KINDS,
  mayManage,
  updateBody,
  type Webhook,
} from "../notify/notify";
import { ConfirmDialog, ifMatch, ProblemBox, ShownOnce, StateBadge, when } from "./common";
import { nameOf, useTeams } from "./lookups";
import { Adder, ResourceForm, type FieldSpec } from "./ResourceForm";
import { type Panel, ResourceTable, RowActions } from "./ResourceTable";

type Shown = { name: string; secret: string; why: "created" | "rotated" };

export function Notifications() {
  const qc = useQueryClient();
  const me = useMe();
  const teams = useTeams();
  const scope = me.data?.token_scope;
  const manage = mayManage(me.data?.role, scope);
  const admin = me.data?.role === "admin";
  // Each subscription carries its last delivery (webhooksQuery reads the list again while one
  // is pending).
  const hooks = useQuery(webhooksQuery());
  const [secret, setSecret] = useState<Shown | null>(null);
  const refresh = () => void qc.invalidateQueries({ queryKey: webhooksKey });
  const myTeams = (teams.data?.items ?? []).filter((t) => admin || me.data?.teams.includes(t.id));
  // Only admins manage the global subscriptions.
  const manages = (w: Webhook) => manage && (admin || w.team_id !== null);
  const fields: FieldSpec[] = [
    { name: "name", label: "Name", required: true, hint: "What it is for, e.g. chat-ops bot" },
    {
      name: "team_id",
      label: "Team",
      kind: "select",
      required: true,
      options: [
        ...myTeams.map((t) => ({ value: t.id, label: t.name })),
        ...(admin ? [{ value: GLOBAL, label: "Global: every team's events and the ISOs'" }] : []),
      ],
    },
    { name: "url", label: "URL", required: true, placeholder: "https://bots.example.org/horizon" },
    { name: "kind", label: "Kind", kind: "select", required: true, options: KINDS },
    { name: "events", label: "Events", kind: "multi", required: true, options: EVENTS.map((e) => ({ value: e, label: eventLabel(e) })) },
    { name: "enabled", label: "Enabled", kind: "checkbox", hint: "Enabling sends a test message first; it must be answered with a 2xx." },
  ];
  return (
    <>
      <div className="page-head">
        <h1>Notifications</h1>
      </div>
      <p className="muted">
        Webhooks that tell bots and chat channels when a run ends, a stack changes state, drift appears or an ISO is built.
        {!manage && me.data && " You can read them; members of the team change them."}
      </p>
      {secret && <SecretOnce shown={secret} onDone={() => setSecret(null)} />}
      {manage && !secret && (
        <Adder
          label="Add a subscription"
          fields={fields}
          initial={{ kind: "standard", team_id: myTeams.length === 1 ? myTeams[0].id : "", events: ["run.finished"], enabled: false }}
          onDone={(r) => {
            const w = r as Schemas["WebhookCreated"];
            setSecret({ name: w.name, secret: w.secret, why: "created" });
            refresh();
          }}
          submit={(v) => call(api.POST("/v1/webhooks", { body: createBody(v) }))}
        />
      )}
      <ProblemBox error={hooks.error} />
      <ResourceTable
        items={hooks.data?.items}
        empty={<p className="muted">No subscription yet.</p>}
        rowKey={(w) => w.id}
        rowData={(w) => ({ "data-webhook": w.name })}
        columns={[
          {
            header: "Name",
            cell: (w) => (
              <>
                {w.name}
                <div className="small muted">{w.url}</div>
              </>
            ),
          },
          { header: "Team", cell: (w) => (w.team_id ? nameOf(teams.data, w.team_id) : "global") },
          { header: "Kind", cell: (w) => w.kind },
          {
            header: "Events",
            cell: (w) => (
              <ul className="plain">
                {w.events.map((e) => (
                  <li key={e}>{eventLabel(e)}</li>
                ))}
              </ul>
            ),
          },
          {
            header: "Enabled",
            data: (w) => ({ "data-enabled": String(w.enabled) }),
            cell: (w) => <Enabled w={w} manage={manages(w)} refresh={refresh} />,
          },
          {
            header: "Last delivery",
            data: () => ({ "data-testid": "last-delivery" }),
            cell: ({ last_delivery: l }) =>
              l ? (
                <>
                  <StateBadge state={l.state} /> {l.last_status ? `HTTP ${l.last_status}` : ""}
                  <div className="small muted">{when(l.last_attempt_at ?? l.created_at)}</div>
                </>
              ) : (
                <span className="muted">none yet</span>
              ),
          },
        ]}
        actions={(w, p) => <Actions w={w} panel={p} manage={manages(w)} onSecret={setSecret} refresh={refresh} />}
        panel={(w, open, close) => {
          const done = () => {
            close();
            refresh();
          };
          if (open === "edit")
            return <Edit w={w} fields={fields.filter((f) => f.name !== "team_id")} onCancel={close} onDone={done} refresh={refresh} />;
          if (open === "delete")
            return (
              <ConfirmDialog
                title={`Delete ${w.name}?`}
                what="subscription"
                name={w.name}
                confirm="Yes, delete"
                run={() => call(api.DELETE("/v1/webhooks/{id}", { params: { path: { id: w.id } } }))}
                onDone={done}
                onCancel={close}
              >
                {" "}
                <span>Its delivery log goes with it; nothing more is sent.</span>
              </ConfirmDialog>
            );
          return <Deliveries w={w} manage={manages(w)} />;
        }}
      />
    </>
  );
}

/** SecretOnce shows a signing secret the one time the API gives it, with a copy button. */
function SecretOnce({ shown, onDone }: { shown: Shown; onDone: () => void }) {
  return (
    <ShownOnce
      data-testid="webhook-secret"
      title={
        <>
          <strong>Signing secret of {shown.name}</strong> ({shown.why}) — copy it into the receiver now: you will not see it again.
        </>
      }
      value={shown.secret}
      valueProps={{ "data-secret": "webhook" }}
      onDone={onDone}
    />
  );
}

/**
 * useAct runs a change of w and re-reads the list after it; its error is kept to show. A stale
 * version re-reads the subscription too (ProblemBox says it was reloaded).
 */
function useAct(w: Webhook, refresh: () => void): [unknown, (fn: () => Promise<unknown>) => Promise<void>] {
  const qc = useQueryClient();
  const [err, setErr] = useState<unknown>(null);
  const act = async (fn: () => Promise<unknown>) => {
    setErr(null);
    try {
      await fn();
      refresh();
      void qc.invalidateQueries({ queryKey: webhookKey(w.id) });
    } catch (e) {
      if (e instanceof ApiError && e.status === 412) refresh();
      setErr(e);
    }
  };
  return [err, act];
}

/** Enabled is whether w is enabled, why not, and the switch; a refusal to enable (the test
 * message was not answered) is shown on it. */
function Enabled({ w, manage, refresh }: { w: Webhook; manage: boolean; refresh: () => void }) {
  const [err, act] = useAct(w, refresh);
  const errs = errorsFor(fieldErrors(err instanceof ApiError && err.status === 422 ? err.problem.errors : []), "enabled");
  return (
    <>
      {w.enabled ? "yes" : "no"}
      {w.disabled_reason && <div className="small muted">{w.disabled_reason}</div>}
      {manage && (
        <div>
          <button
            type="button"
            className="link"
            aria-label={`${w.enabled ? "Disable" : "Enable"} ${w.name}`}
            onClick={() =>
              void act(() =>
                call(api.PATCH("/v1/webhooks/{id}", { params: { path: { id: w.id }, header: ifMatch(w) }, body: { enabled: !w.enabled } })),
              )
            }
          >
            {w.enabled ? "Disable" : "Enable"}
          </button>
        </div>
      )}
      <FieldErrorList msgs={errs} />
      {errs.length === 0 && <ProblemBox error={err} />}
    </>
  );
}

/** Actions is a subscription's bar: its delivery log for everyone; test, edit, rotation and
 * deletion for those who manage it. */
function Actions({
  w,
  panel,
  manage,
  onSecret,
  refresh,
}: {
  w: Webhook;
  panel: Panel;
  manage: boolean;
  onSecret: (s: Shown) => void;
  refresh: () => void;
}) {
  const [err, act] = useAct(w, refresh);
  return (
    <>
      <RowActions name={w.name} panel={panel} edit={manage ? "Edit" : undefined} remove={manage ? "confirm" : undefined}>
        <button type="button" className="link" aria-expanded={panel.open === "log"} onClick={() => panel.toggle("log")}>
          Delivery log
        </button>
        {manage && (
          <>
            <button
              type="button"
              className="link"
              onClick={() =>
                void act(async () => {
                  await call(api.POST("/v1/webhooks/{id}/test", { params: { path: { id: w.id } } }));
                  panel.show("log");
                })
              }
            >
              Send test
            </button>
            {w.kind === "standard" && (
              <button
                type="button"
                className="link"
                onClick={() =>
                  void act(async () => {
                    const r = await call(api.POST("/v1/webhooks/{id}/rotate-secret", { params: { path: { id: w.id } } }));
                    onSecret({ name: r.name, secret: r.secret, why: "rotated" });
                  })
                }
              >
                Rotate secret
              </button>
            )}
          </>
        )}
      </RowActions>
      <ProblemBox error={err} />
    </>
  );
}

/**
 * Edit changes w. The edit is compared with the subscription as it was when the form opened:
 * after a 412 the row shows the latest version, and a second save sends only what was typed
 * here, not a revert of the other change.
 */
function Edit({
  w,
  fields,
  onCancel,
  onDone,
  refresh,
}: {
  w: Webhook;
  fields: FieldSpec[];
  onCancel: () => void;
  onDone: () => void;
  refresh: () => void;
}) {
  const [initial] = useState(() => editValues(w));
  return (
    <ResourceForm
      title={`Change ${w.name}`}
      fields={fields.map((f) =>
        f.name === "url"
          ? { ...f, required: false, placeholder: w.url, hint: "Leave empty to keep the current URL (only its host is shown)." }
          : f,
      )}
      initial={initial}
      onCancel={onCancel}
      onDone={onDone}
      submit={async (v) => {
        try {
          return await call(
            api.PATCH("/v1/webhooks/{id}", { params: { path: { id: w.id }, header: ifMatch(w) }, body: updateBody(v, initial) }),
          );
        } catch (e) {
          // The latest version is read again; what was typed stays for another save.
          if (e instanceof ApiError && e.status === 412) refresh();
          throw e;
        }
      }}
    />
  );
}

/** Deliveries is a subscription's delivery log, newest first. While a delivery is pending, the
 * log is read again every two seconds (deliveries have no live event); then it stops. */
function Deliveries({ w, manage }: { w: Webhook; manage: boolean }) {
  const qc = useQueryClient();
  const [err, setErr] = useState<unknown>(null);
  const log = useQuery(deliveriesQuery(w.id));
  const items = log.data?.items ?? [];
  // The row's last delivery follows the log when the newest delivery changes.
  const newest = items[0] ? `${items[0].id}/${items[0].state}` : "";
  useEffect(() => {
    if (newest) void qc.invalidateQueries({ queryKey: webhooksKey, exact: true });
  }, [newest, qc]);
  return (
    <section aria-label={`Deliveries of ${w.name}`}>
      <ProblemBox error={log.error ?? err} />
      <ResourceTable
        caption={`Deliveries of ${w.name}`}
        items={log.data?.items}
        empty={<p className="muted">Nothing delivered yet.</p>}
        rowKey={(d) => d.id}
        rowData={(d) => ({ "data-delivery": d.event_type, "data-state": d.state })}
        columns={[
          { header: "Event", cell: (d) => eventLabel(d.event_type) },
          { header: "Attempts", cell: (d) => d.attempts },
          {
            header: "Status",
            cell: (d) => <span className={`state state-${d.state === "delivered" ? "succeeded" : d.state}`}>{deliveryStatus(d)}</span>,
          },
          { header: "Latency", cell: (d) => (d.last_latency_ms !== null ? `${d.last_latency_ms} ms` : "") },
          {
            header: "When",
            cell: (d) => (
              <>
                {when(d.last_attempt_at ?? d.created_at)}
                {d.state === "pending" && d.next_attempt_at && <div className="small muted">next try {when(d.next_attempt_at)}</div>}
              </>
            ),
          },
          {
            header: "Answer (first bytes)",
            cell: (d) => (
              <code className="wrap small" title={d.last_response ?? undefined}>
                {firstBytes(d.last_response)}
              </code>
            ),
          },
          { header: "Error", cell: (d) => d.last_error ?? "" },
        ]}
        actions={
          manage &&
          ((d) => (
            <button
              type="button"
              className="link"
              disabled={d.state === "pending"}
              onClick={async () => {
                setErr(null);
                try {
                  await call(
                    api.POST("/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", { params: { path: { id: w.id, delivery_id: d.id } } }),
                  );
                  void qc.invalidateQueries({ queryKey: webhookKey(w.id) });
                } catch (e) {
                  setErr(e);
                }
              }}
            >
              Redeliver
            </button>
          ))
        }
      />
    </section>
  );
}
