// Proxmox servers: registered after the API's connection checks (their messages land on
// their fields); a server's inventory (nodes, storages, pools) refreshed on demand.
import { proxmoxServerQuery, proxmoxServersKey, proxmoxServersQuery, refreshServer } from "../../api/queries/lookups";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call } from "../../api/client";
import { href } from "../../router";
import { Head, ProblemBox, when } from "../common";
import { Adder, given, ResourceForm, str, type FieldSpec } from "../ResourceForm";

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
                void qc.invalidateQueries({ queryKey: proxmoxServersKey });
              }}
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
        </Adder>
      )}
      <ProblemBox error={servers.error} />
      <table>
        <Head cols={["Name", "Cluster", "API", "Nodes online", "Inventory of"]} />
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

export function ServerDetail({ id, admin }: { id: string; admin: boolean }) {
  const qc = useQueryClient();
  const server = useQuery(proxmoxServerQuery(id));
  const refresh = useMutation(refreshServer(qc, id));
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
          <button type="button" disabled={refresh.isPending} onClick={() => refresh.mutate()}>
            {refresh.isPending ? "Refreshing…" : "Refresh inventory"}
          </button>
        </p>
      )}
      <ProblemBox error={refresh.error} />
      <table>
        <caption>Nodes</caption>
        <Head cols={["Node", "State", "CPUs", "Memory", "SSH", "Host key"]} />
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
        <Head cols={["Storage", "Type", "Content", "Nodes"]} />
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
        <Head cols={["Pool", "Comment"]} />
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
