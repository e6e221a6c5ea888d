// Proxmox servers: registered after the API's connection checks (their messages land on
// their fields); a server's inventory (nodes, storages, pools) refreshed on demand.
import { proxmoxServerQuery, proxmoxServersKey, proxmoxServersQuery, refreshServer } from "../../api/queries/lookups";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call } from "../../api/client";
import { href } from "../../router";
import { ProblemBox, when } from "../common";
import { Adder, given, str, type FieldSpec } from "../ResourceForm";
import { ResourceTable } from "../ResourceTable";

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

export function Servers({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const servers = useQuery(proxmoxServersQuery());
  return (
    <section aria-label="Proxmox servers">
      {admin && (
        <Adder
          label="Register a Proxmox server"
          submitLabel="Check and register"
          fields={serverFields}
          initial={{ ssh_user: "root" }}
          onDone={() => void qc.invalidateQueries({ queryKey: proxmoxServersKey })}
          submit={(v) =>
            call(
              api.POST("/v1/proxmox-servers", {
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
      <ProblemBox error={servers.error} />
      <ResourceTable
        items={servers.data?.items}
        rowKey={(s) => s.id}
        rowData={(s) => ({ "data-server": s.name })}
        columns={[
          { header: "Name", cell: (s) => <a href={href(`/catalogue/servers/${s.id}`)}>{s.name}</a> },
          {
            header: "Cluster",
            cell: (s) => (
              <>
                {s.cluster_name} <span className="muted small">PVE {s.pve_version}</span>
              </>
            ),
          },
          { header: "API", cell: (s) => <code>{s.api_url}</code> },
          { header: "Nodes online", cell: (s) => `${s.nodes.filter((n) => n.online).length} of ${s.nodes.length}` },
          { header: "Inventory of", cell: (s) => when(s.refreshed_at) },
        ]}
      />
    </section>
  );
}

export function ServerDetail({ id, admin }: { id: string; admin: boolean }) {
  const qc = useQueryClient();
  const server = useQuery(proxmoxServerQuery(id));
  const refresh = useMutation(refreshServer(qc, id));
  const s = server.data;
  if (!s) return <ProblemBox error={server.error} />;
  const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
  // named is an inventory item's name and what the token lacks on it.
  const named = (name: string, l: unknown) => (
    <>
      {name} {Array.isArray(l) && l.length > 0 && <span className="field-errors">the token lacks {l.join(", ")}</span>}
    </>
  );
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
          <button type="button" disabled={refresh.isPending} onClick={() => refresh.mutate()}>
            {refresh.isPending ? "Refreshing…" : "Refresh inventory"}
          </button>
        </p>
      )}
      <ProblemBox error={refresh.error} />
      <ResourceTable
        caption="Nodes"
        items={s.nodes}
        rowKey={(n) => n.name}
        rowData={(n) => ({ "data-node": n.name })}
        columns={[
          { header: "Node", cell: (n) => named(n.name, n.token_lacks) },
          { header: "State", cell: (n) => (n.online ? "online" : <strong>offline</strong>) },
          { header: "CPUs", cell: (n) => n.cpus },
          { header: "Memory", cell: (n) => gib(n.memory_bytes) },
          { header: "SSH", cell: (n) => n.ssh_address ?? "—" },
          {
            header: "Host key",
            cell: (n) =>
              n.ssh_host_key_fingerprint ? (
                <>
                  <code>{n.ssh_host_key_fingerprint}</code> <span className="muted small">{n.host_key_source?.replaceAll("_", " ")}</span>
                </>
              ) : (
                "—"
              ),
          },
        ]}
      />
      <ResourceTable
        caption="Storages"
        items={s.storages}
        rowKey={(x) => x.name}
        columns={[
          { header: "Storage", cell: (x) => named(x.name, x.token_lacks) },
          { header: "Type", cell: (x) => `${x.type}${x.shared ? " (shared)" : ""}` },
          { header: "Content", cell: (x) => x.content.join(", ") },
          { header: "Nodes", cell: (x) => x.nodes.join(", ") },
        ]}
      />
      <ResourceTable
        caption="Resource pools"
        items={s.pools}
        rowKey={(p) => p.pool}
        columns={[
          { header: "Pool", cell: (p) => named(p.pool, p.token_lacks) },
          { header: "Comment", cell: (p) => p.comment },
        ]}
      />
    </section>
  );
}
