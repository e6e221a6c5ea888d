// ISOs. Their events carry iso_id: the stream invalidates ["isos"] and ["iso", id] (events.ts).
import { queryOptions } from "@tanstack/react-query";
import { api, call } from "../client";
import { limit } from "./lookups";

export const isosKey = ["isos"] as const;
export const isoKey = (id: string) => ["iso", id] as const;

export const isosQuery = (f: { state: string; server: string }) =>
  queryOptions({
    queryKey: [...isosKey, f.state, f.server],
    queryFn: () =>
      call(
        api.GET("/v1/isos", {
          params: { query: { ...limit.query, state: (f.state || undefined) as never, proxmox_server_id: f.server || undefined } },
        }),
      ),
  });

export const isoQuery = (id: string) =>
  queryOptions({ queryKey: isoKey(id), queryFn: () => call(api.GET("/v1/isos/{id}", { params: { path: { id } } })) });

export const isoRunsQuery = (id: string) =>
  queryOptions({
    queryKey: [...isoKey(id), "runs"],
    queryFn: () => call(api.GET("/v1/isos/{id}/runs", { params: { path: { id }, query: { limit: "50" } } })),
  });
