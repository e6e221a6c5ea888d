// The lists the console looks names up in (templates, environments, teams, users) and the
// catalogue's lists: fetched whole (up to 200) and kept a minute when only names are wanted.
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { api, call } from "../client";

export const limit = { query: { limit: "200" } };
const MINUTE = 60_000;

export const templatesKey = ["templates"] as const;
export const environmentsKey = ["environments"] as const;
export const teamsKey = ["teams"] as const;
export const usersKey = ["users"] as const;
export const proxmoxServersKey = ["proxmox-servers"] as const;
export const networksKey = ["networks"] as const;
export const nagiosServersKey = ["nagios-servers"] as const;
export const sshKeysKey = ["ssh-keys"] as const;
export const gitCredentialsKey = ["git-credentials"] as const;
export const isoTemplatesKey = ["iso-templates"] as const;

export const templatesQuery = () =>
  queryOptions({ queryKey: templatesKey, queryFn: () => call(api.GET("/v1/templates", { params: limit })), staleTime: MINUTE });
export const environmentsQuery = () =>
  queryOptions({ queryKey: environmentsKey, queryFn: () => call(api.GET("/v1/environments", { params: limit })), staleTime: MINUTE });
export const teamsQuery = () =>
  queryOptions({ queryKey: teamsKey, queryFn: () => call(api.GET("/v1/teams", { params: limit })), staleTime: MINUTE });
export const usersQuery = () => queryOptions({ queryKey: usersKey, queryFn: () => call(api.GET("/v1/users", { params: limit })) });
export const proxmoxServersQuery = () =>
  queryOptions({ queryKey: proxmoxServersKey, queryFn: () => call(api.GET("/v1/proxmox-servers", { params: limit })) });
export const networksQuery = () => queryOptions({ queryKey: networksKey, queryFn: () => call(api.GET("/v1/networks", { params: limit })) });
export const nagiosServersQuery = () =>
  queryOptions({ queryKey: nagiosServersKey, queryFn: () => call(api.GET("/v1/nagios-servers", { params: limit })) });
export const sshKeysQuery = () => queryOptions({ queryKey: sshKeysKey, queryFn: () => call(api.GET("/v1/ssh-keys", { params: limit })) });
export const gitCredentialsQuery = () =>
  queryOptions({ queryKey: gitCredentialsKey, queryFn: () => call(api.GET("/v1/git-credentials", { params: limit })) });
// Only the API registers an ISO template and no event says so: the list is read again whenever
// a page that shows it opens (the build form's choices would miss one registered meanwhile), not
// only once the console's default five seconds of freshness have passed.
export const isoTemplatesQuery = () =>
  queryOptions({ queryKey: isoTemplatesKey, queryFn: () => call(api.GET("/v1/iso-templates", { params: limit })), staleTime: 0 });

export const proxmoxServerKey = (id: string) => ["proxmox-server", id] as const;
export const proxmoxServerQuery = (id: string) =>
  queryOptions({ queryKey: proxmoxServerKey(id), queryFn: () => call(api.GET("/v1/proxmox-servers/{id}", { params: { path: { id } } })) });

export const networkKey = (id: string) => ["network", id] as const;
export const networkQuery = (id: string) =>
  queryOptions({ queryKey: networkKey(id), queryFn: () => call(api.GET("/v1/networks/{id}", { params: { path: { id } } })) });

export const formOptionsKey = ["form-options"] as const;

/** refreshServer asks a Proxmox server's inventory again; pending until the page has it. */
export const refreshServer = (qc: QueryClient, id: string) => ({
  mutationFn: () => call(api.POST("/v1/proxmox-servers/{id}/refresh", { params: { path: { id } } })),
  onSuccess: () => qc.invalidateQueries({ queryKey: proxmoxServerKey(id) }),
});
