// API tokens and webhooks: what People and Notifications list.
import { queryOptions } from "@tanstack/react-query";
import type { WebhookDelivery } from "../../notify/notify";
import { api, call } from "../client";
import { limit } from "./lookups";

export const tokensKey = ["tokens"] as const;
export const webhooksKey = ["webhooks"] as const;
export const webhookKey = (id: string) => ["webhook", id] as const;

export const tokensQuery = () => queryOptions({ queryKey: tokensKey, queryFn: () => call(api.GET("/v1/tokens", { params: limit })) });

export const webhooksQuery = () => queryOptions({ queryKey: webhooksKey, queryFn: () => call(api.GET("/v1/webhooks", { params: limit })) });

const pending = (items: WebhookDelivery[] | undefined) => (items ?? []).some((d) => d.state === "pending");

/** deliveriesQuery is a webhook's latest deliveries (n of them), polled while one is pending. */
export const deliveriesQuery = (id: string, n: 1 | 50) =>
  queryOptions({
    queryKey: n === 1 ? [...webhookKey(id), "deliveries", "last"] : [...webhookKey(id), "deliveries"],
    queryFn: () => call(api.GET("/v1/webhooks/{id}/deliveries", { params: { path: { id }, query: { limit: String(n) } } })),
    refetchInterval: (q) => (pending(q.state.data?.items) ? 2000 : false),
  });
