// Networks and their named addresses: free, or attached to which stack; one or a range at once.
import { networkKey, networkQuery, networksKey, networksQuery } from "../../api/queries/lookups";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call } from "../../api/client";
import { href } from "../../router";
import { ProblemBox, when } from "../common";
import { Adder, list, str } from "../ResourceForm";
import { ResourceTable, RowActions } from "../ResourceTable";

export function Networks({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const networks = useQuery(networksQuery());
  return (
    <section aria-label="Networks">
      {admin && (
        <Adder
          label="Add a network"
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "cidr", label: "CIDR", required: true, placeholder: "10.20.0.0/24" },
            { name: "gateway", label: "Gateway", required: true },
            { name: "dns", label: "DNS servers", hint: "Comma-separated" },
            { name: "bridge", label: "Bridge", required: true, placeholder: "vmbr0" },
            { name: "vlan", label: "VLAN", kind: "number" },
          ]}
          onDone={() => void qc.invalidateQueries({ queryKey: networksKey })}
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
      <ProblemBox error={networks.error} />
      <ResourceTable
        items={networks.data?.items}
        rowKey={(n) => n.id}
        rowData={(n) => ({ "data-network": n.name })}
        columns={[
          { header: "Name", cell: (n) => <a href={href(`/catalogue/networks/${n.id}`)}>{n.name}</a> },
          { header: "CIDR", cell: (n) => n.cidr },
          { header: "Gateway", cell: (n) => n.gateway },
          { header: "DNS", cell: (n) => n.dns.join(", ") },
          { header: "Bridge", cell: (n) => n.bridge },
          { header: "VLAN", cell: (n) => n.vlan ?? "—" },
        ]}
      />
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
        <Adder
          label="Add an address"
          title="Add a named address"
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "ip", label: "IP address", required: true },
          ]}
          onDone={refresh}
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
      {admin && (
        <Adder
          label="Add a range of addresses"
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
          onDone={refresh}
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
      <ProblemBox error={addrs.error} />
      <p className="muted">
        {items.filter((a) => a.state === "free").length} free of {items.length}.
      </p>
      <ResourceTable
        items={items}
        rowKey={(a) => a.id}
        rowData={(a) => ({ "data-address": a.name })}
        columns={[
          { header: "Name", cell: (a) => a.name },
          { header: "IP", cell: (a) => a.ip },
          { header: "State", cell: (a) => a.state },
          {
            header: "Stack",
            cell: (a) =>
              a.stack ? (
                <a href={href(`/stacks/${a.stack.id}`)}>{a.stack.name}</a>
              ) : (
                a.state === "attached" && <span className="muted">another team's</span>
              ),
          },
          { header: "Since", cell: (a) => when(a.attached_at) },
        ]}
        actions={
          admin &&
          ((a) =>
            a.state === "free" && (
              <RowActions
                name={a.name}
                remove={{
                  run: () => call(api.DELETE("/v1/networks/{id}/addresses/{address_id}", { params: { path: { id, address_id: a.id } } })),
                  onDone: refresh,
                }}
              />
            ))
        }
      />
    </section>
  );
}
