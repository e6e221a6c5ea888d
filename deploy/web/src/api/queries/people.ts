// API tokens and webhooks: what People and Notifications list.
import { queryOptions } from "@tanstack/react-query";
import type { WebhookDelivery } from "../../notify/notify";
import { api, call } from "../client";
import { limit } from "./lookups";

export const tokensKey = ["tokens"] as const;
export const webhooksKey = ["webhooks"] as const;
export const webhookKey = (id: string) => ["webhook", id] as const;

export const tokensQuery = () => queryOptions({ queryKey: tokensKey, queryFn: () => call(api.GET("/v1/tokens", { params: limit })) });

/** webhooksQuery is the subscriptions, each with its last delivery, read again every two seconds
 * while one of those is pending (deliveries have no live event). */
export const webhooksQuery = () =>
  queryOptions({
    queryKey: webhooksKey,
    queryFn: () => call(api.GET("/v1/webhooks", { params: limit })),
    refetchInterval: (q) => (pending(q.state.data?.items.map((w) => w.last_delivery)) ? 2000 : false),
  });

const pending = (items: (WebhookDelivery | null | undefined)[] | undefined) => (items ?? []).some((d) => d?.state === "pending");

/** deliveriesQuery is a webhook's delivery log (the latest 50), polled while one is pending. */
export const deliveriesQuery = (id: string) =>
  queryOptions({
    queryKey: [...webhookKey(id), "deliveries"],
    queryFn: () => call(api.GET("/v1/webhooks/{id}/deliveries", { params: { path: { id }, query: { limit: "50" } } })),
    refetchInterval: (q) => (pending(q.state.data?.items) ? 2000 : false),
  });
