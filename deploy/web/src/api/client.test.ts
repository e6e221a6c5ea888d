import createClient from "openapi-fetch";
import { describe, expect, it } from "vitest";
import { idempotent } from "./client";
import type { paths } from "./schema";

/** sent is the Idempotency-Key of each request a client with the middleware sends. */
function recorder() {
  const keys: (string | null)[] = [];
  const c = createClient<paths>({
    baseUrl: "http://horizon.test",
    fetch: async (r: Request) => {
      keys.push(r.headers.get("Idempotency-Key"));
      return new Response("{}", { status: 200, headers: { "Content-Type": "application/json" } });
    },
  });
  c.use(idempotent);
  return { c, keys };
}

describe("idempotent", () => {
  it("gives each POST and DELETE a key of its own", async () => {
    const { c, keys } = recorder();
    await c.POST("/v1/stacks/{id}/deploy", { params: { path: { id: "s" } } });
    await c.POST("/v1/stacks/{id}/deploy", { params: { path: { id: "s" } } });
    await c.DELETE("/v1/ssh-keys/{id}", { params: { path: { id: "k" } } });
    expect(keys.every((k) => k && k.length > 0)).toBe(true);
    expect(new Set(keys).size).toBe(3);
  });

  it("leaves reads, plans and stream tokens without one, and a key the call set alone", async () => {
    const { c, keys } = recorder();
    await c.GET("/v1/me");
    await c.POST("/v1/stacks/{id}/plan", { params: { path: { id: "s" } }, body: {} as never });
    await c.POST("/v1/stream-tokens", { body: { purpose: "events" } });
    await c.POST("/v1/stacks/{id}/cancel", { params: { path: { id: "s" }, header: { "Idempotency-Key": "mine" } } as never });
    expect(keys).toEqual([null, null, null, "mine"]);
  });
});
