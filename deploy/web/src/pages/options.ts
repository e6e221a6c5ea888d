// What a form's attachments may be set to in one environment: its networks' free addresses
// (plus those the stack already holds), the caller's SSH keys, the environment's Proxmox servers
// with their online nodes and pools, the built ISOs, and whether it has a Nagios server (with the host groups found on it).
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call, type Stack } from "../api/client";
import type { Options } from "../form/model";
import { formOptionsKey, proxmoxServerQuery, sshKeysQuery } from "../api/queries/lookups";

export function useFormOptions(envId: string, stack?: Stack) {
  const qc = useQueryClient();
  return useQuery({
    queryKey: [...formOptionsKey, envId, stack?.id, stack?.version],
    enabled: !!envId,
    queryFn: async (): Promise<Options> => {
      const env = await call(api.GET("/v1/environments/{id}", { params: { path: { id: envId } } }));
      const held = new Set<string>();
      for (const j of Object.values(stack?.jobs ?? {})) for (const e of j.executions) if (e.address_id) held.add(e.address_id);
      const [addrLists, keys, servers, isos, nagios] = await Promise.all([
        Promise.all(
          env.network_ids.map((id) => call(api.GET("/v1/networks/{id}/addresses", { params: { path: { id }, query: { limit: "200" } } }))),
        ),
        qc.fetchQuery(sshKeysQuery()),
        Promise.all(env.proxmox_server_ids.map((id) => qc.fetchQuery(proxmoxServerQuery(id)))),
        call(api.GET("/v1/isos", { params: { query: { limit: "200" } } })).catch(() => ({
          items: [] as { id: string; name: string; state: string }[],
        })),
        env.nagios_server_id
          ? call(api.GET("/v1/nagios-servers/{id}", { params: { path: { id: env.nagios_server_id } } })).catch(() => null)
          : Promise.resolve(null),
      ]);
      return {
        addresses: addrLists
          .flatMap((l) => l.items)
          .filter((a) => a.state === "free" || held.has(a.id))
          .map((a) => ({ value: a.id, label: `${a.name} (${a.ip})` })),
        sshKeys: keys.items.map((k) => ({ value: k.id, label: k.name })),
        servers: servers.map((s) => ({
          value: s.id,
          label: s.name,
          nodes: s.nodes.filter((n) => n.online).map((n) => n.name),
          pools: s.pools.map((p) => p.pool),
        })),
        isos: isos.items.filter((i) => i.state === "built").map((i) => ({ value: i.id, label: i.name })),
        nagios: !!env.nagios_server_id,
        hostgroups: nagios?.hostgroups ?? [],
      };
    },
  });
}
