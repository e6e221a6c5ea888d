// People: users and their roles and teams, teams and their members, and API tokens. Admins
// create and change users and teams and see everyone's tokens; everyone mints and revokes
// their own, with a scope that narrows what it may do (full, deploy, read, prometheus). A minted
// token is shown once, with a copy button, and never again.
import { teamsKey, usersKey, usersQuery } from "../api/queries/lookups";
import { tokensKey, tokensQuery } from "../api/queries/people";
import { quotaQuery, usageQuery } from "../api/queries/stacks";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, call } from "../api/client";
import { useMe } from "../api/queries/me";
import { href } from "../router";
import { ifMatch, ProblemBox, ShownOnce, when } from "./common";
import { nameOf, useTeams } from "./lookups";
import { usageLines } from "../quota/usage";
import { Adder, list, ResourceForm, str, type FieldSpec, type Values } from "./ResourceForm";
import { ResourceTable, RowActions } from "./ResourceTable";
import { SCOPES, scopeLabel, type TokenScope } from "../notify/notify";

const TABS = [
  ["users", "Users"],
  ["teams", "Teams"],
  ["tokens", "API tokens"],
] as const;
const ROLES = ["admin", "member", "viewer"] as const;
type Role = (typeof ROLES)[number];

function useUsers() {
  return useQuery(usersQuery());
}

export function People({ tab }: { tab: string }) {
  const me = useMe();
  const admin = me.data?.role === "admin";
  const current = TABS.find(([t]) => t === tab) ? tab : "users";
  return (
    <>
      <div className="page-head">
        <h1>People</h1>
      </div>
      <nav className="tabs" aria-label="People">
        {TABS.map(([t, label]) => (
          <a key={t} href={href(`/people/${t}`)} aria-current={t === current ? "page" : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {current === "users" && <Users admin={admin} />}
      {current === "teams" && <Teams admin={admin} />}
      {current === "tokens" && <Tokens admin={admin} />}
    </>
  );
}

function Users({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const users = useUsers();
  const teams = useTeams();
  const fields: FieldSpec[] = [
    { name: "name", label: "Name", required: true },
    { name: "email", label: "E-mail", required: true },
    { name: "role", label: "Role", kind: "select", required: true, options: ROLES.map((r) => ({ value: r, label: r })) },
    { name: "teams", label: "Teams", kind: "multi", options: (teams.data?.items ?? []).map((t) => ({ value: t.id, label: t.name })) },
  ];
  const refresh = () => void qc.invalidateQueries({ queryKey: usersKey });
  const body = (v: Values) => ({ name: str(v, "name"), email: str(v, "email"), role: str(v, "role") as Role, teams: list(v, "teams") });
  return (
    <section aria-label="Users">
      {admin && (
        <Adder
          label="Add a user"
          fields={fields}
          initial={{ role: "member" }}
          onDone={refresh}
          submit={(v) => call(api.POST("/v1/users", { body: body(v) }))}
        />
      )}
      <ProblemBox error={users.error} />
      <ResourceTable
        items={users.data?.items}
        rowKey={(u) => u.id}
        rowData={(u) => ({ "data-user": u.email })}
        columns={[
          { header: "Name", cell: (u) => u.name },
          { header: "E-mail", cell: (u) => u.email },
          { header: "Role", cell: (u) => <span className="label">{u.role}</span> },
          { header: "Teams", cell: (u) => u.teams.map((t) => nameOf(teams.data, t)).join(", ") },
        ]}
        actions={admin && ((u, p) => <RowActions name={u.name} panel={p} edit="Change" />)}
        edit={(u) => ({
          title: `Change ${u.name}`,
          fields,
          initial: { name: u.name, email: u.email, role: u.role, teams: u.teams },
          onDone: refresh,
          submit: (v) => call(api.PATCH("/v1/users/{id}", { params: { path: { id: u.id }, header: ifMatch(u) }, body: body(v) })),
        })}
      />
    </section>
  );
}

function Teams({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const teams = useTeams();
  const users = useUsers();
  return (
    <section aria-label="Teams">
      {admin && (
        <Adder
          label="Add a team"
          fields={[{ name: "name", label: "Name", required: true }]}
          onDone={() => void qc.invalidateQueries({ queryKey: teamsKey })}
          submit={(v) => call(api.POST("/v1/teams", { body: { name: str(v, "name") } }))}
        />
      )}
      <ProblemBox error={teams.error} />
      <ResourceTable
        items={teams.data?.items}
        rowKey={(t) => t.id}
        rowData={(t) => ({ "data-team": t.name })}
        columns={[
          { header: "Team", cell: (t) => t.name },
          {
            header: "Members",
            cell: (t) =>
              (users.data?.items ?? [])
                .filter((u) => u.teams.includes(t.id))
                .map((u) => `${u.name} (${u.role})`)
                .join(", ") || <span className="muted">none</span>,
          },
          {
            header: "Quota usage",
            cell: (t) => (
              <>
                <TeamUsage team={t.id} name={t.name} />
                {admin && <QuotaEditor team={t.id} name={t.name} />}
              </>
            ),
          },
          { header: "Since", cell: (t) => when(t.created_at) },
        ]}
      />
      {admin && <p className="muted small">Members join a team from their user (People → Users → Change).</p>}
    </section>
  );
}

// TeamUsage draws a bar per dimension the team has a quota in (GET /v1/teams/{id}/usage).
function TeamUsage({ team, name }: { team: string; name: string }) {
  const usage = useQuery(usageQuery(team));
  if (usage.error) return <span className="muted">unavailable</span>;
  if (!usage.data) return null;
  return (
    <ul className="usage">
      {usageLines(usage.data).map((l) => (
        <li key={l.dimension} data-dimension={l.dimension}>
          {l.label}{" "}
          {l.limit !== null && (
            <meter aria-label={`${name}: ${l.label}`} min={0} max={Math.max(l.limit, l.used, 1)} high={l.limit} value={l.used} />
          )}{" "}
          <span className="small">{l.text}</span>
        </li>
      ))}
    </ul>
  );
}

const QUOTA_FIELDS: FieldSpec[] = [
  { name: "limits.machines", label: "Machines", kind: "number", hint: "Empty: no limit" },
  { name: "limits.vcpus", label: "vCPUs", kind: "number", hint: "Empty: no limit" },
  { name: "limits.memory_mib", label: "Memory (MiB)", kind: "number", hint: "Empty: no limit" },
  { name: "limits.disk_gib", label: "Disk (GiB)", kind: "number", hint: "Empty: no limit" },
];

// QuotaEditor lets an admin change a team's limits over all its stacks (PATCH, so the
// environments' narrowings stay as they are), with the quota's ETag: a quota someone else
// changed meanwhile is a 412, shown. An empty field is unlimited; the server checks the numbers.
function QuotaEditor({ team, name }: { team: string; name: string }) {
  const qc = useQueryClient();
  const [open, setOpen] = useState(false);
  const quota = useQuery({ ...quotaQuery(team), enabled: open });
  if (!open)
    return (
      <button type="button" className="link" onClick={() => setOpen(true)} aria-label={`Set quota of ${name}`}>
        Set quota
      </button>
    );
  if (quota.error) return <ProblemBox error={quota.error} />;
  if (!quota.data) return <span className="muted">Loading…</span>;
  const q = quota.data;
  // Not a number is sent as typed, for the server to refuse on its field (NaN would be null:
  // unlimited).
  const limit = (v: string | string[] | boolean) =>
    typeof v !== "string" || v.trim() === "" ? null : Number.isFinite(Number(v)) ? Number(v) : (v as unknown as number);
  return (
    <ResourceForm
      title={`Quota of ${name}`}
      fields={QUOTA_FIELDS}
      initial={Object.fromEntries(
        QUOTA_FIELDS.map((f) => [f.name, String(q.limits[f.name.slice("limits.".length) as keyof typeof q.limits] ?? "")]),
      )}
      onCancel={() => setOpen(false)}
      onDone={() => {
        setOpen(false);
        void qc.invalidateQueries({ queryKey: quotaQuery(team).queryKey });
        void qc.invalidateQueries({ queryKey: usageQuery(team).queryKey });
      }}
      submit={(v) =>
        call(
          api.PATCH("/v1/teams/{id}/quotas", {
            params: { path: { id: team }, header: q.version > 0 ? { "If-Match": `"${q.version}"` } : {} },
            body: {
              limits: {
                machines: limit(v["limits.machines"]),
                vcpus: limit(v["limits.vcpus"]),
                memory_mib: limit(v["limits.memory_mib"]),
                disk_gib: limit(v["limits.disk_gib"]),
              },
            },
          }),
        )
      }
    />
  );
}

function Tokens({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const me = useMe();
  const users = useUsers();
  const tokens = useQuery(tokensQuery());
  const [minted, setMinted] = useState<{ name: string; token: string; scope: string } | null>(null);
  const refresh = () => void qc.invalidateQueries({ queryKey: tokensKey });
  const fields: FieldSpec[] = [
    { name: "name", label: "Name", required: true, hint: "What it is for, e.g. ci-pipeline" },
    {
      name: "scope",
      label: "Scope",
      kind: "select",
      required: true,
      options: SCOPES,
      hint: "What the token may do; never more than its user's role allows. Fixed once minted.",
    },
  ];
  if (admin)
    fields.push({
      name: "user_id",
      label: "For",
      kind: "select",
      options: (users.data?.items ?? []).map((u) => ({ value: u.id, label: `${u.name} (${u.email})` })),
    });
  return (
    <section aria-label="API tokens">
      {minted ? (
        <ShownOnce
          title={
            <>
              <strong>Token {minted.name}</strong> (scope {minted.scope}) — copy it now: it is shown only this once.
            </>
          }
          value={minted.token}
          valueProps={{ "data-token": "minted" }}
          onDone={() => setMinted(null)}
        />
      ) : (
        <Adder
          label="Mint a token"
          title="Mint an API token"
          submitLabel="Mint"
          fields={fields}
          initial={{ scope: "full" }}
          onDone={(r) => {
            const t = r as { name: string; token: string; scope: string };
            setMinted({ name: t.name, token: t.token, scope: t.scope });
            refresh();
          }}
          submit={(v) =>
            call(
              api.POST("/v1/tokens", {
                body: {
                  name: str(v, "name"),
                  scope: (str(v, "scope") || "full") as TokenScope,
                  ...(str(v, "user_id") ? { user_id: str(v, "user_id") } : {}),
                },
              }),
            )
          }
        />
      )}
      <ProblemBox error={tokens.error} />
      <ResourceTable
        items={tokens.data?.items}
        rowKey={(t) => t.id}
        rowData={(t) => ({ "data-token-name": t.name })}
        columns={[
          {
            header: "Name",
            cell: (t) => (
              <>
                {t.name}
                {t.id === me.data?.token_id && <span className="muted small"> (signed in with it)</span>}
              </>
            ),
          },
          { header: "For", cell: (t) => users.data?.items.find((u) => u.id === t.user_id)?.name ?? t.user_id.slice(0, 8) },
          {
            header: "Scope",
            cell: (t) => (
              <span className="label" title={scopeLabel(t.scope)}>
                {t.scope}
              </span>
            ),
          },
          { header: "Minted", cell: (t) => when(t.created_at) },
          { header: "Last used", cell: (t) => when(t.last_used_at) || "never" },
          { header: "State", cell: (t) => (t.revoked_at ? `revoked ${when(t.revoked_at)}` : "active") },
        ]}
        actions={(t) =>
          !t.revoked_at && (
            <RowActions
              name={t.name}
              remove={{
                verb: "Revoke",
                run: () => call(api.DELETE("/v1/tokens/{id}", { params: { path: { id: t.id } } })),
                onDone: refresh,
              }}
            />
          )
        }
      />
    </section>
  );
}
