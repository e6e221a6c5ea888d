// Who is signed in: the shell's header, and every page that offers what a role may do.
import { queryOptions, useQuery } from "@tanstack/react-query";
import { api, call } from "../client";

export const meKey = ["me"] as const;

export const meQuery = () => queryOptions({ queryKey: meKey, queryFn: () => call(api.GET("/v1/me")) });

export function useMe() {
  return useQuery(meQuery());
}
