// The catalogue: what stacks are built with. Everyone reads it; admins write it (the buttons
// are not offered to others, and the API refuses them anyway). One page per kind, reached from
// the catalogue's own tabs: Proxmox servers (registered after the API's connection checks,
// whose messages land on their fields; inventory refreshed on demand), environments, networks
// and their named addresses (free, or attached to which stack; one or a range at once), SSH keys (yours; admins everyone's), Nagios servers (registered
// and changed after the API's checks of both their CGIs and SSH side) and git credentials.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, call, idempotencyKey } from "../api/client";
import { useMe } from "../App";
import { href } from "../router";
import { ProblemBox, when } from "./common";
import { nameOf, useEnvironments } from "./lookups";
import { Adder, changed, Delete, given, list, opt, ResourceForm, str, type FieldSpec, type Values } from "./ResourceForm";

const TABS = [
  ["servers", "Proxmox servers"],
  ["environments", "Environments"],
  ["networks", "Networks"],
  ["ssh-keys", "SSH keys"],
  ["nagios", "Nagios servers"],
  ["git-credentials", "Git credentials"],
] as const;

/** catalogueTab is the page a route's tab shows: servers when none is named, "" for an unknown one (said, not replaced by another). */
export function catalogueTab(tab: string | undefined): string {
  if (!tab) return "servers";
  return TABS.some(([t]) => t === tab) ? tab : "";
}

const key = () => ({ "Idempotency-Key": idempotencyKey() });
const limit = { query: { limit: "200" } };

export function Catalogue({ tab, id }: { tab: string; id?: string }) {
  const me = useMe();
  const admin = me.data?.role === "admin";
  const current = catalogueTab(tab);
  return (
    <>
      <div className="page-head">
        <h1>Catalogue</h1>
      </div>
      <nav className="tabs" aria-label="Catalogue">
        {TABS.map(([t, label]) => (
          <a key={t} href={href(`/catalogue/${t}`)} aria-current={t === current ? "page" : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {current === "" && (
        <p className="problem" role="alert">
          The catalogue has no page “{tab}”: choose one above.
        </p>
      )}
      {current === "servers" && (id ? <ServerDetail id={id} admin={admin} /> : <Servers admin={admin} />)}
      {current === "environments" && <Environments admin={admin} />}
      {current === "networks" && (id ? <NetworkDetail id={id} admin={admin} /> : <Networks admin={admin} />)}
      {current === "ssh-keys" && <SSHKeys />}
      {current === "nagios" && <Nagios admin={admin} />}
      {current === "git-credentials" && <GitCredentials admin={admin} />}
    </>
  );
}

const serverFields: FieldSpec[] = [
  { name: "name", label: "Name", required: true },
  { name: "api_url", label: "API URL", required: true, placeholder: "https://pve1.example.org:8006" },
  { name: "token_id", label: "API token id", required: true, placeholder: "horizon@pve!horizon" },
  { name: "token_secret", label: "API token secret", kind: "secret", required: true },
  { name: "tls_fingerprint", label: "TLS fingerprint (SHA-256)", hint: "Of the API's certificate; or give the CA below." },
  { name: "ca_cert", label: "CA certificate (PEM)", kind: "textarea" },
  { name: "ssh_user", label: "SSH user" },
  {
    name: "ssh_private_key",
    label: "SSH private key",
    kind: "textarea",
    required: true,
    hint: "Horizon's key for the nodes (cloud-init snippets).",
  },
  {
    name: "nodes",
    label: "Nodes' SSH",
    kind: "textarea",
    hint: "One node a line: name host:port SHA256:fingerprint (or tofu to trust the key seen first).",
  },
];

/** nodeLines reads the nodes' SSH settings, one a line: name, address, and fingerprint or "tofu". */
export function nodeLines(text: string) {
  return text
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[0])
    .map(([name, ssh_address = "", key = ""]) =>
      key.toLowerCase() === "tofu" ? { name, ssh_address, trust_on_first_use: true } : { name, ssh_address, ssh_host_key_fingerprint: key },
    );
}

function Servers({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const servers = useQuery({ queryKey: ["proxmox-servers"], queryFn: () => call(api.GET("/v1/proxmox-servers", { params: limit })) });
  return (
    <section aria-label="Proxmox servers">
      {admin && (
        <Adder label="Register a Proxmox server">
          {(close) => (
            <ResourceForm
              title="Register a Proxmox server"
              submitLabel="Check and register"
              fields={serverFields}
              initial={{ ssh_user: "root" }}
              onCancel={close}
              onDone={() => {
                close();
                void qc.invalidateQueries({ queryKey: ["proxmox-servers"] });
              }}
              submit={(v) =>
                call(
                  api.POST("/v1/proxmox-servers", {
                    params: { header: key() },
                    body: {
                      name: str(v, "name"),
                      api_url: str(v, "api_url"),
                      token_id: str(v, "token_id"),
                      token_secret: str(v, "token_secret"),
                      ssh_private_key: str(v, "ssh_private_key"),
                      ssh_user: str(v, "ssh_user") || "root",
                      ...given(v, "tls_fingerprint", "ca_cert"),
                      nodes: nodeLines(str(v, "nodes")),
                    },
                  }),
                )
              }
            />
          )}
        </Adder>
      )}
      <ProblemBox error={servers.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Cluster</th>
            <th scope="col">API</th>
            <th scope="col">Nodes online</th>
            <th scope="col">Inventory of</th>
          </tr>
        </thead>
        <tbody>
          {servers.data?.items.map((s) => (
            <tr key={s.id} data-server={s.name}>
              <td>
                <a href={href(`/catalogue/servers/${s.id}`)}>{s.name}</a>
              </td>
              <td>
                {s.cluster_name} <span className="muted small">PVE {s.pve_version}</span>
              </td>
              <td>
                <code>{s.api_url}</code>
              </td>
              <td>
                {s.nodes.filter((n) => n.online).length} of {s.nodes.length}
              </td>
              <td>{when(s.refreshed_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function ServerDetail({ id, admin }: { id: string; admin: boolean }) {
  const qc = useQueryClient();
  const server = useQuery({
    queryKey: ["proxmox-server", id],
    queryFn: () => call(api.GET("/v1/proxmox-servers/{id}", { params: { path: { id } } })),
  });
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const s = server.data;
  if (!s) return <ProblemBox error={server.error} />;
  const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
  const lacks = (l: unknown) =>
    Array.isArray(l) && l.length ? <span className="field-errors">the token lacks {l.join(", ")}</span> : null;
  return (
    <section aria-label={`Proxmox server ${s.name}`}>
      <h2>
        {s.name}{" "}
        <span className="muted small">
          cluster {s.cluster_name}, PVE {s.pve_version}
        </span>
      </h2>
      <dl className="facts">
        <dt>API</dt>
        <dd>
          <code>{s.api_url}</code> as <code>{s.token_id}</code>
        </dd>
        <dt>TLS</dt>
        <dd>{s.tls_fingerprint ? <code>{s.tls_fingerprint}</code> : "signed by the CA given"}</dd>
        <dt>SSH</dt>
        <dd>
          as {s.ssh_user}; install this key on each node: <code className="wrap">{s.ssh_public_key}</code>
        </dd>
        <dt>Inventory of</dt>
        <dd>{when(s.refreshed_at)}</dd>
      </dl>
      {admin && (
        <p>
          <button
            type="button"
            disabled={busy}
            onClick={async () => {
              setErr(null);
              setBusy(true);
              try {
                await call(api.POST("/v1/proxmox-servers/{id}/refresh", { params: { path: { id } } }));
                await qc.invalidateQueries({ queryKey: ["proxmox-server", id] });
              } catch (e) {
                setErr(e);
              } finally {
                setBusy(false);
              }
            }}
          >
            {busy ? "Refreshing…" : "Refresh inventory"}
          </button>
        </p>
      )}
      <ProblemBox error={err} />
      <table>
        <caption>Nodes</caption>
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">State</th>
            <th scope="col">CPUs</th>
            <th scope="col">Memory</th>
            <th scope="col">SSH</th>
            <th scope="col">Host key</th>
          </tr>
        </thead>
        <tbody>
          {s.nodes.map((n) => (
            <tr key={n.name} data-node={n.name}>
              <td>
                {n.name} {lacks(n.token_lacks)}
              </td>
              <td>{n.online ? "online" : <strong>offline</strong>}</td>
              <td>{n.cpus}</td>
              <td>{gib(n.memory_bytes)}</td>
              <td>{n.ssh_address ?? "—"}</td>
              <td>
                {n.ssh_host_key_fingerprint ? (
                  <>
                    <code>{n.ssh_host_key_fingerprint}</code> <span className="muted small">{n.host_key_source?.replaceAll("_", " ")}</span>
                  </>
                ) : (
                  "—"
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <table>
        <caption>Storages</caption>
        <thead>
          <tr>
            <th scope="col">Storage</th>
            <th scope="col">Type</th>
            <th scope="col">Content</th>
            <th scope="col">Nodes</th>
          </tr>
        </thead>
        <tbody>
          {s.storages.map((x) => (
            <tr key={x.name}>
              <td>
                {x.name} {lacks(x.token_lacks)}
              </td>
              <td>
                {x.type}
                {x.shared && " (shared)"}
              </td>
              <td>{x.content.join(", ")}</td>
              <td>{x.nodes.join(", ")}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <table>
        <caption>Resource pools</caption>
        <thead>
          <tr>
            <th scope="col">Pool</th>
            <th scope="col">Comment</th>
          </tr>
        </thead>
        <tbody>
          {s.pools.map((p) => (
            <tr key={p.pool}>
              <td>
                {p.pool} {lacks(p.token_lacks)}
              </td>
              <td>{p.comment}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function useCatalogueLists() {
  const networks = useQuery({ queryKey: ["networks"], queryFn: () => call(api.GET("/v1/networks", { params: limit })) });
  const servers = useQuery({ queryKey: ["proxmox-servers"], queryFn: () => call(api.GET("/v1/proxmox-servers", { params: limit })) });
  const nagios = useQuery({ queryKey: ["nagios-servers"], queryFn: () => call(api.GET("/v1/nagios-servers", { params: limit })) });
  return { networks, servers, nagios };
}

function Environments({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const envs = useEnvironments();
  const { networks, servers, nagios } = useCatalogueLists();
  const [editing, setEditing] = useState("");
  const opts = (xs: { id: string; name: string }[] | undefined) => (xs ?? []).map((x) => ({ value: x.id, label: x.name }));
  const fields: FieldSpec[] = [
    { name: "name", label: "Name", required: true },
    { name: "description", label: "Description", kind: "textarea" },
    { name: "network_ids", label: "Networks", kind: "multi", options: opts(networks.data?.items) },
    { name: "proxmox_server_ids", label: "Proxmox servers", kind: "multi", options: opts(servers.data?.items) },
    { name: "nagios_server_id", label: "Nagios server", kind: "select", options: opts(nagios.data?.items) },
  ];
  const body = (v: Parameters<Parameters<typeof ResourceForm>[0]["submit"]>[0]) => ({
    name: str(v, "name"),
    description: str(v, "description"),
    network_ids: list(v, "network_ids"),
    proxmox_server_ids: list(v, "proxmox_server_ids"),
    nagios_server_id: opt(v, "nagios_server_id") ?? null,
  });
  const done = () => {
    setEditing("");
    void qc.invalidateQueries({ queryKey: ["environments"] });
  };
  return (
    <section aria-label="Environments">
      {admin && (
        <Adder label="Add an environment">
          {(close) => (
            <ResourceForm
              title="Add an environment"
              fields={fields}
              onCancel={close}
              onDone={() => {
                close();
                done();
              }}
              submit={(v) => call(api.POST("/v1/environments", { params: { header: key() }, body: body(v) }))}
            />
          )}
        </Adder>
      )}
      <ProblemBox error={envs.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Networks</th>
            <th scope="col">Proxmox servers</th>
            <th scope="col">Nagios</th>
            <th scope="col">
              <span className="muted">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {envs.data?.items.map((e) => (
            <tr key={e.id} data-environment={e.name}>
              <td>
                {e.name}
                <div className="small muted">{e.description}</div>
              </td>
              <td>{e.network_ids.map((n) => nameOf(networks.data, n)).join(", ")}</td>
              <td>{e.proxmox_server_ids.map((n) => nameOf(servers.data, n)).join(", ")}</td>
              <td>{nameOf(nagios.data, e.nagios_server_id) || "—"}</td>
              <td>
                {admin && editing !== e.id && (
                  <button type="button" className="link" onClick={() => setEditing(e.id)} aria-label={`Edit ${e.name}`}>
                    Edit
                  </button>
                )}
                {editing === e.id && (
                  <ResourceForm
                    title={`Edit ${e.name}`}
                    fields={fields}
                    initial={{
                      name: e.name,
                      description: e.description,
                      network_ids: e.network_ids,
                      proxmox_server_ids: e.proxmox_server_ids,
                      nagios_server_id: e.nagios_server_id ?? "",
                    }}
                    onCancel={() => setEditing("")}
                    onDone={done}
                    submit={(v) =>
                      call(
                        api.PATCH("/v1/environments/{id}", {
                          params: { path: { id: e.id }, header: { "If-Match": `"${e.version}"` } },
                          body: body(v),
                        }),
                      )
                    }
                  />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function Networks({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const networks = useQuery({ queryKey: ["networks"], queryFn: () => call(api.GET("/v1/networks", { params: limit })) });
  return (
    <section aria-label="Networks">
      {admin && (
        <Adder label="Add a network">
          {(close) => (
            <ResourceForm
              title="Add a network"
              fields={[
                { name: "name", label: "Name", required: true },
                { name: "cidr", label: "CIDR", required: true, placeholder: "10.20.0.0/24" },
                { name: "gateway", label: "Gateway", required: true },
                { name: "dns", label: "DNS servers", hint: "Comma-separated" },
                { name: "bridge", label: "Bridge", required: true, placeholder: "vmbr0" },
                { name: "vlan", label: "VLAN", kind: "number" },
              ]}
              onCancel={close}
              onDone={() => {
                close();
                void qc.invalidateQueries({ queryKey: ["networks"] });
              }}
              submit={(v) =>
                call(
                  api.POST("/v1/networks", {
                    params: { header: key() },
                    body: {
                      name: str(v, "name"),
                      cidr: str(v, "cidr"),
                      gateway: str(v, "gateway"),
                      dns: list(v, "dns"),
                      bridge: str(v, "bridge"),
                      vlan: str(v, "vlan") ? Number(str(v, "vlan")) : null,
                    },
                  }),
                )
              }
            />
          )}
        </Adder>
      )}
      <ProblemBox error={networks.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">CIDR</th>
            <th scope="col">Gateway</th>
            <th scope="col">DNS</th>
            <th scope="col">Bridge</th>
            <th scope="col">VLAN</th>
          </tr>
        </thead>
        <tbody>
          {networks.data?.items.map((n) => (
            <tr key={n.id} data-network={n.name}>
              <td>
                <a href={href(`/catalogue/networks/${n.id}`)}>{n.name}</a>
              </td>
              <td>{n.cidr}</td>
              <td>{n.gateway}</td>
              <td>{n.dns.join(", ")}</td>
              <td>{n.bridge}</td>
              <td>{n.vlan ?? "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function NetworkDetail({ id, admin }: { id: string; admin: boolean }) {
  const qc = useQueryClient();
  const network = useQuery({ queryKey: ["network", id], queryFn: () => call(api.GET("/v1/networks/{id}", { params: { path: { id } } })) });
  // Every address, page by page (a /24 holds more than one page).
  const addrs = useQuery({
    queryKey: ["network", id, "addresses"],
    queryFn: async () => {
      const items = [];
      let cursor: string | undefined;
      do {
        const page = await call(api.GET("/v1/networks/{id}/addresses", { params: { path: { id }, query: { limit: "200", cursor } } }));
        items.push(...page.items);
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      return { items };
    },
  });
  const refresh = () => void qc.invalidateQueries({ queryKey: ["network", id] });
  const n = network.data;
  if (!n) return <ProblemBox error={network.error} />;
  const items = addrs.data?.items ?? [];
  return (
    <section aria-label={`Network ${n.name}`}>
      <h2>
        {n.name}{" "}
        <span className="muted small">
          {n.cidr} via {n.gateway} on {n.bridge}
          {n.vlan ? ` VLAN ${n.vlan}` : ""}
        </span>
      </h2>
      {admin && (
        <Adder label="Add an address">
          {(close) => (
            <ResourceForm
              title="Add a named address"
              fields={[
                { name: "name", label: "Name", required: true },
                { name: "ip", label: "IP address", required: true },
              ]}
              onCancel={close}
              onDone={() => {
                close();
                refresh();
              }}
              submit={(v) =>
                call(
                  api.POST("/v1/networks/{id}/addresses", {
                    params: { path: { id }, header: key() },
                    body: { name: str(v, "name"), ip: str(v, "ip") },
                  }),
                )
              }
            />
          )}
        </Adder>
      )}
      {admin && (
        <Adder label="Add a range of addresses">
          {(close) => (
            <ResourceForm
              title="Add a range of addresses"
              submitLabel="Add the range"
              fields={[
                {
                  name: "name_prefix",
                  label: "Name prefix",
                  required: true,
                  placeholder: "vm-",
                  hint: "Each is named the prefix and its last number: vm-10, vm-11…",
                },
                { name: "first", label: "First IP", required: true },
                { name: "last", label: "Last IP", required: true, hint: "Inclusive; at most 256 at once. All or nothing." },
              ]}
              onCancel={close}
              onDone={() => {
                close();
                refresh();
              }}
              submit={(v) =>
                call(
                  api.POST("/v1/networks/{id}/address-ranges", {
                    params: { path: { id }, header: key() },
                    body: { name_prefix: str(v, "name_prefix"), first: str(v, "first"), last: str(v, "last") },
                  }),
                )
              }
            />
          )}
        </Adder>
      )}
      <ProblemBox error={addrs.error} />
      <p className="muted">
        {items.filter((a) => a.state === "free").length} free of {items.length}.
      </p>
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">IP</th>
            <th scope="col">State</th>
            <th scope="col">Stack</th>
            <th scope="col">Since</th>
            {admin && (
              <th scope="col">
                <span className="muted">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {items.map((a) => (
            <tr key={a.id} data-address={a.name}>
              <td>{a.name}</td>
              <td>{a.ip}</td>
              <td>{a.state}</td>
              <td>
                {a.stack ? (
                  <a href={href(`/stacks/${a.stack.id}`)}>{a.stack.name}</a>
                ) : a.state === "attached" ? (
                  <span className="muted">another team's</span>
                ) : (
                  ""
                )}
              </td>
              <td>{when(a.attached_at)}</td>
              {admin && (
                <td>
                  {a.state === "free" && (
                    <Delete
                      what={a.name}
                      run={() =>
                        call(api.DELETE("/v1/networks/{id}/addresses/{address_id}", { params: { path: { id, address_id: a.id } } }))
                      }
                      onDone={refresh}
                    />
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function SSHKeys() {
  const qc = useQueryClient();
  const keys = useQuery({ queryKey: ["ssh-keys"], queryFn: () => call(api.GET("/v1/ssh-keys", { params: limit })) });
  // The stack form's choices hold the keys too: a key added from the form's link is there to
  // choose on coming back, not after the form's cached choices go stale.
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: ["ssh-keys"] });
    void qc.invalidateQueries({ queryKey: ["form-options"] });
  };
  return (
    <section aria-label="SSH keys">
      <Adder label="Add an SSH key">
        {(close) => (
          <ResourceForm
            title="Add your SSH key"
            fields={[
              { name: "name", label: "Name", required: true },
              {
                name: "public_key",
                label: "Public key",
                kind: "textarea",
                required: true,
                hint: "One authorized_keys line, e.g. ssh-ed25519 AAAA… you@laptop",
              },
            ]}
            onCancel={close}
            onDone={() => {
              close();
              refresh();
            }}
            submit={(v) =>
              call(
                api.POST("/v1/ssh-keys", { params: { header: key() }, body: { name: str(v, "name"), public_key: str(v, "public_key") } }),
              )
            }
          />
        )}
      </Adder>
      <ProblemBox error={keys.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
            <th scope="col">Fingerprint</th>
            <th scope="col">Added</th>
            <th scope="col">
              <span className="muted">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.data?.items.map((k) => (
            <tr key={k.id} data-key={k.name}>
              <td>{k.name}</td>
              <td>
                {k.type} {k.bits}
              </td>
              <td>
                <code>{k.fingerprint}</code>
              </td>
              <td>{when(k.created_at)}</td>
              <td>
                <Delete
                  what={k.name}
                  run={() => call(api.DELETE("/v1/ssh-keys/{id}", { params: { path: { id: k.id } } }))}
                  onDone={refresh}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

const nagiosFields = (editing: boolean): FieldSpec[] => [
  { name: "name", label: "Name", required: true },
  { name: "url", label: "CGI URL", required: true, placeholder: "https://nagios.example.org/cgi-bin/nagios4" },
  { name: "username", label: "CGI user", required: true },
  { name: "password", label: "CGI password", kind: "secret", required: !editing, hint: editing ? "Leave blank to keep it." : undefined },
  {
    name: "ssh_address",
    label: "SSH address",
    required: !editing,
    placeholder: "nagios.example.org:22",
    hint: "Horizon writes its object files over SSH.",
  },
  { name: "ssh_user", label: "SSH user" },
  {
    name: "ssh_private_key",
    label: "SSH private key",
    kind: "textarea",
    required: !editing,
    hint: editing ? "Leave blank to keep it." : "Unencrypted, OpenSSH or PEM; its public half in the user's authorized_keys.",
  },
  {
    name: "ssh_host_key_fingerprint",
    label: "SSH host key (SHA256)",
    required: !editing,
    placeholder: "SHA256:…",
    hint: "As ssh-keygen -lf prints it for the server's host key.",
  },
  { name: "config_dir", label: "Config directory", hint: "Horizon's own, inside a cfg_dir of nagios.cfg." },
  { name: "verify_command", label: "Verify command" },
  { name: "reload_command", label: "Reload command", hint: "Its program must exist; Nagios is not reloaded to check it." },
];

/** Debian nagios4's defaults, shown in the registration form. */
const nagiosDefaults: Values = {
  ssh_user: "root",
  config_dir: "/etc/nagios4/conf.d/horizon",
  verify_command: "/usr/sbin/nagios4 -v /etc/nagios4/nagios.cfg",
  reload_command: "systemctl reload nagios4",
};

const nagiosKeys = [
  "name",
  "url",
  "username",
  "password",
  "ssh_address",
  "ssh_user",
  "ssh_private_key",
  "ssh_host_key_fingerprint",
  "config_dir",
  "verify_command",
  "reload_command",
];

function Nagios({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const nagios = useQuery({ queryKey: ["nagios-servers"], queryFn: () => call(api.GET("/v1/nagios-servers", { params: limit })) });
  const [editing, setEditing] = useState("");
  const refresh = () => void qc.invalidateQueries({ queryKey: ["nagios-servers"] });
  return (
    <section aria-label="Nagios servers">
      {admin && (
        <Adder label="Register a Nagios server">
          {(close) => (
            <ResourceForm
              title="Register a Nagios server"
              submitLabel="Check and register"
              fields={nagiosFields(false)}
              initial={nagiosDefaults}
              onCancel={close}
              onDone={() => {
                close();
                refresh();
              }}
              submit={(v) =>
                call(
                  api.POST("/v1/nagios-servers", {
                    params: { header: key() },
                    body: {
                      name: str(v, "name"),
                      url: str(v, "url"),
                      username: str(v, "username"),
                      password: str(v, "password"),
                      ssh_address: str(v, "ssh_address"),
                      ssh_private_key: str(v, "ssh_private_key"),
                      ssh_host_key_fingerprint: str(v, "ssh_host_key_fingerprint"),
                      ...given(v, "ssh_user", "config_dir", "verify_command", "reload_command"),
                    },
                  }),
                )
              }
            />
          )}
        </Adder>
      )}
      <ProblemBox error={nagios.error} />
      {nagios.data && nagios.data.items.length === 0 ? (
        <p className="empty">No Nagios server is registered.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">URL</th>
              <th scope="col">User</th>
              <th scope="col">SSH</th>
              <th scope="col">Changed</th>
              {admin && (
                <th scope="col">
                  <span className="muted">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {nagios.data?.items.map((n) => {
              const initial: Values = {
                name: n.name,
                url: n.url,
                username: n.username,
                password: "",
                ssh_address: n.ssh_address,
                ssh_user: n.ssh_user,
                ssh_private_key: "",
                ssh_host_key_fingerprint: n.ssh_host_key_fingerprint,
                config_dir: n.config_dir,
                verify_command: n.verify_command,
                reload_command: n.reload_command,
              };
              return (
                <tr key={n.id} data-nagios={n.name}>
                  <td>{n.name}</td>
                  <td>
                    <code>{n.url}</code>
                  </td>
                  <td>{n.username}</td>
                  <td>
                    {n.ssh_address ? (
                      <>
                        {n.ssh_user}@{n.ssh_address}
                      </>
                    ) : (
                      <span className="field-errors">no SSH access: nothing can be published</span>
                    )}
                  </td>
                  <td>{when(n.updated_at)}</td>
                  {admin && (
                    <td>
                      {editing !== n.id && (
                        <button type="button" className="link" onClick={() => setEditing(n.id)} aria-label={`Edit ${n.name}`}>
                          Edit
                        </button>
                      )}
                      {editing !== n.id && (
                        <Delete
                          what={n.name}
                          run={() => call(api.DELETE("/v1/nagios-servers/{id}", { params: { path: { id: n.id } } }))}
                          onDone={refresh}
                        />
                      )}
                      {editing === n.id && (
                        <ResourceForm
                          title={`Edit ${n.name}`}
                          submitLabel="Check and save"
                          fields={nagiosFields(true)}
                          initial={initial}
                          onCancel={() => setEditing("")}
                          onDone={() => {
                            setEditing("");
                            refresh();
                          }}
                          submit={(v) =>
                            call(
                              api.PATCH("/v1/nagios-servers/{id}", {
                                params: { path: { id: n.id }, header: { "If-Match": `"${n.version}"` } },
                                body: changed(v, initial, ...nagiosKeys),
                              }),
                            )
                          }
                        />
                      )}
                    </td>
                  )}
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}

function GitCredentials({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const creds = useQuery({ queryKey: ["git-credentials"], queryFn: () => call(api.GET("/v1/git-credentials", { params: limit })) });
  const refresh = () => void qc.invalidateQueries({ queryKey: ["git-credentials"] });
  return (
    <section aria-label="Git credentials">
      {admin && (
        <Adder label="Add a git credential">
          {(close) => (
            <ResourceForm
              title="Add a git credential"
              fields={[
                { name: "name", label: "Name", required: true },
                {
                  name: "url_prefix",
                  label: "URL prefix",
                  required: true,
                  placeholder: "https://git.example.org/infra/",
                  hint: "https://… takes a token; ssh://… a key.",
                },
                { name: "username", label: "User name (HTTPS)" },
                { name: "token", label: "Token (HTTPS)", kind: "secret" },
                { name: "ssh_private_key", label: "SSH private key (SSH)", kind: "textarea" },
                { name: "ssh_host_key", label: "SSH host key (SSH)", kind: "textarea", hint: "authorized_keys lines of the git server" },
              ]}
              onCancel={close}
              onDone={() => {
                close();
                refresh();
              }}
              submit={(v) =>
                call(
                  api.POST("/v1/git-credentials", {
                    params: { header: key() },
                    body: {
                      name: str(v, "name"),
                      url_prefix: str(v, "url_prefix"),
                      ...given(v, "username", "token", "ssh_private_key", "ssh_host_key"),
                    },
                  }),
                )
              }
            />
          )}
        </Adder>
      )}
      <ProblemBox error={creds.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">URL prefix</th>
            <th scope="col">Kind</th>
            <th scope="col">Host keys</th>
            <th scope="col">Added</th>
            {admin && (
              <th scope="col">
                <span className="muted">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {creds.data?.items.map((c) => (
            <tr key={c.id} data-credential={c.name}>
              <td>{c.name}</td>
              <td>
                <code>{c.url_prefix}</code>
              </td>
              <td>
                {c.kind}
                {c.username ? ` as ${c.username}` : ""}
              </td>
              <td>
                {c.ssh_host_key_fingerprints.map((f) => (
                  <code key={f}>{f} </code>
                ))}
              </td>
              <td>{when(c.created_at)}</td>
              {admin && (
                <td>
                  <Delete
                    what={c.name}
                    run={() => call(api.DELETE("/v1/git-credentials/{id}", { params: { path: { id: c.id } } }))}
                    onDone={refresh}
                  />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
