// Networks and their named addresses: free, or attached to which stack; one or a range at once.
import { networkKey, networkQuery, networksKey, networksQuery } from "../../api/queries/lookups";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call } from "../../api/client";
import { href } from "../../router";
import { Head, ProblemBox, when } from "../common";
import { Adder, Delete, list, ResourceForm, str } from "../ResourceForm";

export function Networks({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const networks = useQuery(networksQuery());
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
                void qc.invalidateQueries({ queryKey: networksKey });
              }}
              submit={(v) =>
                call(
                  api.POST("/v1/networks", {
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
        <Head cols={["Name", "CIDR", "Gateway", "DNS", "Bridge", "VLAN"]} />
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

export function NetworkDetail({ id, admin }: { id: string; admin: boolean }) {
  const qc = useQueryClient();
  const network = useQuery(networkQuery(id));
  // Every address, page by page (a /24 holds more than one page).
  const addrs = useQuery({
    queryKey: [...networkKey(id), "addresses"],
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
  const refresh = () => void qc.invalidateQueries({ queryKey: networkKey(id) });
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
                    params: { path: { id } },
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
                    params: { path: { id } },
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
        <Head cols={["Name", "IP", "State", "Stack", "Since"]} actions={admin} />
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
