// A stack and what hangs off it. Every key starts ["stack", id]: the events stream invalidates
// that prefix when anything of the stack changes (see events.ts).
import { queryOptions } from "@tanstack/react-query";
import { api, call } from "../client";

export const stacksKey = ["stacks"] as const;
export const startupKey = ["startup"] as const;
export const stackKey = (id: string) => ["stack", id] as const;

export interface StackFilter {
  state: string;
  team: string;
  env: string;
  label: string;
  q: string;
  drift: string;
  cursor: string;
}

export const stacksQuery = (f: StackFilter) =>
  queryOptions({
    queryKey: [...stacksKey, f.state, f.team, f.env, f.label, f.q, f.drift, f.cursor],
    queryFn: () =>
      call(
        api.GET("/v1/stacks", {
          params: {
            query: {
              limit: "50",
              state: f.state || undefined,
              team_id: f.team || undefined,
              environment_id: f.env || undefined,
              label: f.label || undefined,
              q: f.q.trim() || undefined,
              drifted: f.drift === "" ? undefined : f.drift === "drifted",
              cursor: f.cursor || undefined,
            },
          },
        }),
      ),
  });

export const startupQuery = () => queryOptions({ queryKey: startupKey, queryFn: () => call(api.GET("/v1/startup")) });

/** readStack is GET /v1/stacks/{id}: the stack and its ETag (the If-Match of a change). */
async function readStack(id: string) {
  const r = await api.GET("/v1/stacks/{id}", { params: { path: { id } } });
  return { stack: await call(Promise.resolve(r)), etag: r.response.headers.get("ETag") ?? "" };
}

export const stackQuery = (id: string) => queryOptions({ queryKey: stackKey(id), queryFn: async () => (await readStack(id)).stack });

/** stackEditQuery is the stack a form edits, with its ETag (the If-Match of the save); never cached. */
export const stackEditQuery = (id: string | undefined) =>
  queryOptions({ queryKey: ["stack-edit", id], enabled: !!id, gcTime: 0, queryFn: () => readStack(id!) });

export const pipelineQuery = (id: string, run: string) =>
  queryOptions({
    queryKey: [...stackKey(id), "pipeline", run],
    retry: false,
    queryFn: () => call(api.GET("/v1/stacks/{id}/pipeline", { params: { path: { id }, query: run ? { run } : {} } })),
  });

export const actionsQuery = (id: string) =>
  queryOptions({
    queryKey: [...stackKey(id), "actions"],
    queryFn: () => call(api.GET("/v1/stacks/{id}/actions", { params: { path: { id } } })),
  });

export const actionInstancesQuery = (id: string) =>
  queryOptions({
    queryKey: [...stackKey(id), "action-instances"],
    queryFn: () => call(api.GET("/v1/stacks/{id}/action-instances", { params: { path: { id } } })),
  });

/** runsQuery is a stack's latest runs, of one kind when given. */
export const runsQuery = (id: string, kind?: "action", limit = 20) =>
  queryOptions({
    queryKey: kind ? [...stackKey(id), "runs", kind] : [...stackKey(id), "runs"],
    queryFn: () => call(api.GET("/v1/stacks/{id}/runs", { params: { path: { id }, query: { kind, limit: String(limit) } } })),
  });

export const outputsQuery = (id: string) =>
  queryOptions({
    queryKey: [...stackKey(id), "outputs"],
    queryFn: () => call(api.GET("/v1/stacks/{id}/outputs", { params: { path: { id } } })),
  });

export const historyQuery = (id: string) =>
  queryOptions({
    queryKey: [...stackKey(id), "history"],
    queryFn: () => call(api.GET("/v1/stacks/{id}/history", { params: { path: { id }, query: { limit: "50" } } })),
  });

export const abandonManifestQuery = (id: string) =>
  queryOptions({
    queryKey: [...stackKey(id), "abandon-manifest"],
    retry: false,
    queryFn: () => call(api.GET("/v1/stacks/{id}/abandon-manifest", { params: { path: { id } } })),
  });

export const usageQuery = (team: string) =>
  queryOptions({
    queryKey: ["usage", team],
    enabled: !!team,
    queryFn: () => call(api.GET("/v1/teams/{id}/usage", { params: { path: { id: team } } })),
  });

export const quotaQuery = (team: string) =>
  queryOptions({
    queryKey: ["quota", team],
    queryFn: () => call(api.GET("/v1/teams/{id}/quotas", { params: { path: { id: team } } })),
  });
