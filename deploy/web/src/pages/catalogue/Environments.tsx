// Environments: a name and the networks, Proxmox servers and Nagios server stacks of it use.
import { environmentsKey, nagiosServersQuery, networksQuery, proxmoxServersQuery } from "../../api/queries/lookups";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call } from "../../api/client";
import { ifMatch, ProblemBox } from "../common";
import { nameOf, useEnvironments } from "../lookups";
import { Adder, list, opt, str, type FieldSpec, type Values } from "../ResourceForm";
import { ResourceTable, RowActions } from "../ResourceTable";

function useCatalogueLists() {
  const networks = useQuery(networksQuery());
  const servers = useQuery(proxmoxServersQuery());
  const nagios = useQuery(nagiosServersQuery());
  return { networks, servers, nagios };
}

export function Environments({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const envs = useEnvironments();
  const { networks, servers, nagios } = useCatalogueLists();
  const opts = (xs: { id: string; name: string }[] | undefined) => (xs ?? []).map((x) => ({ value: x.id, label: x.name }));
  const fields: FieldSpec[] = [
    { name: "name", label: "Name", required: true },
    { name: "description", label: "Description", kind: "textarea" },
    { name: "network_ids", label: "Networks", kind: "multi", options: opts(networks.data?.items) },
    { name: "proxmox_server_ids", label: "Proxmox servers", kind: "multi", options: opts(servers.data?.items) },
    { name: "nagios_server_id", label: "Nagios server", kind: "select", options: opts(nagios.data?.items) },
  ];
  const body = (v: Values) => ({
    name: str(v, "name"),
    description: str(v, "description"),
    network_ids: list(v, "network_ids"),
    proxmox_server_ids: list(v, "proxmox_server_ids"),
    nagios_server_id: opt(v, "nagios_server_id") ?? null,
  });
  const refresh = () => void qc.invalidateQueries({ queryKey: environmentsKey });
  return (
    <section aria-label="Environments">
      {admin && (
        <Adder
          label="Add an environment"
          fields={fields}
          onDone={refresh}
          submit={(v) => call(api.POST("/v1/environments", { body: body(v) }))}
        />
      )}
      <ProblemBox error={envs.error} />
      <ResourceTable
        items={envs.data?.items}
        rowKey={(e) => e.id}
        rowData={(e) => ({ "data-environment": e.name })}
        columns={[
          {
            header: "Name",
            cell: (e) => (
              <>
                {e.name}
                <div className="small muted">{e.description}</div>
              </>
            ),
          },
          { header: "Networks", cell: (e) => e.network_ids.map((n) => nameOf(networks.data, n)).join(", ") },
          { header: "Proxmox servers", cell: (e) => e.proxmox_server_ids.map((n) => nameOf(servers.data, n)).join(", ") },
          { header: "Nagios", cell: (e) => nameOf(nagios.data, e.nagios_server_id) || "—" },
        ]}
        actions={admin && ((e, p) => <RowActions name={e.name} panel={p} edit="Edit" />)}
        edit={(e) => ({
          title: `Edit ${e.name}`,
          fields,
          initial: {
            name: e.name,
            description: e.description,
            network_ids: e.network_ids,
            proxmox_server_ids: e.proxmox_server_ids,
            nagios_server_id: e.nagios_server_id ?? "",
          },
          onDone: refresh,
          submit: (v) => call(api.PATCH("/v1/environments/{id}", { params: { path: { id: e.id }, header: ifMatch(e) }, body: body(v) })),
        })}
      />
    </section>
  );
}
