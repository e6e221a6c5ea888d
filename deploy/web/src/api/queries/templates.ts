// Templates and their versions. A version is immutable: fetched once.
import { queryOptions } from "@tanstack/react-query";
import { api, call } from "../client";

export const templateKey = (id: string) => ["template", id] as const;

/** templateQuery is a template with its ETag (the If-Match of a new version). */
export const templateQuery = (id: string) =>
  queryOptions({
    queryKey: templateKey(id),
    queryFn: async () => {
      const r = await api.GET("/v1/templates/{id}", { params: { path: { id } } });
      return { t: await call(Promise.resolve(r)), etag: r.response.headers.get("ETag") ?? "" };
    },
  });

export const versionChangesQuery = (id: string, v: number) =>
  queryOptions({
    queryKey: [...templateKey(id), "changes", v],
    enabled: v > 0,
    retry: false,
    queryFn: () => call(api.GET("/v1/templates/{id}/versions/{v}/changes", { params: { path: { id, v: String(v) } } })),
  });

/** versionQuery is a template version (immutable: fetched once). */
export const versionQuery = (id: string | undefined, n: number | undefined) =>
  queryOptions({
    queryKey: ["version", id, n],
    enabled: !!id && !!n && n > 0,
    staleTime: Number.POSITIVE_INFINITY,
    queryFn: () => call(api.GET("/v1/templates/{id}/versions/{v}", { params: { path: { id: id!, v: String(n) } } })),
  });

/** formQuery is the form a template version's parameters are filled in with. */
export const formQuery = (id: string, v: number) =>
  queryOptions({
    queryKey: ["form", id, v],
    enabled: !!id && v > 0,
    queryFn: () => call(api.GET("/v1/templates/{id}/versions/{v}/form", { params: { path: { id, v: String(v) } } })),
  });
