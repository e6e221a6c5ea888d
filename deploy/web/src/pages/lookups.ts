// Names of the things stacks refer to by id (templates, environments, teams), for display.
import { useQuery } from "@tanstack/react-query";
import { api, call } from "../api/client";

export function useTemplates() {
  return useQuery({
    queryKey: ["templates"],
    queryFn: () => call(api.GET("/v1/templates", { params: { query: { limit: "200" } } })),
    staleTime: 60_000,
  });
}

export function useEnvironments() {
  return useQuery({
    queryKey: ["environments"],
    queryFn: () => call(api.GET("/v1/environments", { params: { query: { limit: "200" } } })),
    staleTime: 60_000,
  });
}

export function useTeams() {
  return useQuery({
    queryKey: ["teams"],
    queryFn: () => call(api.GET("/v1/teams", { params: { query: { limit: "200" } } })),
    staleTime: 60_000,
  });
}

export function nameOf(list: { items: { id: string; name: string }[] } | undefined, id: string | null | undefined): string {
  if (!id) return "";
  return list?.items.find((x) => x.id === id)?.name ?? id.slice(0, 8);
}
