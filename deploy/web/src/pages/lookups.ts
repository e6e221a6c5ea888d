// Names of the things stacks refer to by id (templates, environments, teams), for display.
import { useQuery } from "@tanstack/react-query";
import { environmentsQuery, teamsQuery, templatesQuery } from "../api/queries/lookups";

export const useTemplates = () => useQuery(templatesQuery());
export const useEnvironments = () => useQuery(environmentsQuery());
export const useTeams = () => useQuery(teamsQuery());

export function nameOf(list: { items: { id: string; name: string }[] } | undefined, id: string | null | undefined): string {
  if (!id) return "";
  return list?.items.find((x) => x.id === id)?.name ?? id.slice(0, 8);
}
