// The typed client of Horizon's API, generated from openapi/openapi.yaml (schema.d.ts, see
// `npm run gen`; a unit test fails when it is stale). Every request carries the signed-in
// token; a 401 anywhere signs the user out, back to the sign-in screen.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
export type Stack = Schemas["Stack"];
export type StackSummary = Schemas["StackSummary"];
export type Execution = Schemas["Execution"];
export type ExecutionRequest = Schemas["ExecutionRequest"];
export type TemplateForm = Schemas["TemplateForm"];
export type FormJob = Schemas["FormJob"];
export type FormParameter = Schemas["FormParameter"];
export type Pipeline = Schemas["Pipeline"];
export type Card = Pipeline["columns"][number]["cards"][number];
export type Problem = Schemas["Problem"];
export type LogLine = Schemas["LogLine"];
export type HorizonEvent = Schemas["Event"];

const TOKEN_KEY = "horizon.token";

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token: string | null) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
  window.dispatchEvent(new Event("horizon-auth"));
}

/** ApiError is a problem+json answer (or a transport failure) thrown by `call`. */
export class ApiError extends Error {
  constructor(
    public status: number,
    public problem: Problem,
    public etag?: string,
  ) {
    super(problem.detail ? `${problem.title}: ${problem.detail}` : problem.title);
  }
}

export type Client = ReturnType<typeof createClient<paths>>;

let baseUrl = "";
export let api: Client = createClient<paths>({ baseUrl: "" });

export function apiBase() {
  return baseUrl;
}

const auth: Middleware = {
  onRequest({ request }) {
    const t = getToken();
    if (t) request.headers.set("Authorization", `Bearer ${t}`);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401) setToken(null);
    return response;
  },
};

// POSTs that change nothing worth replaying: a stream token (a secret, minted anew each time),
// a plan (a read), the first admin's setup (no token yet to keep a key under).
const notReplayed = /\/v1\/(stream-tokens|setup)$|\/plan$/;

/**
 * idempotent gives every other POST and DELETE its own Idempotency-Key (unless the call set
 * one): a request the network retried is then done once. A new call is a new key.
 */
export const idempotent: Middleware = {
  onRequest({ request, schemaPath }) {
    if (
      (request.method === "POST" || request.method === "DELETE") &&
      !notReplayed.test(schemaPath) &&
      !request.headers.has("Idempotency-Key")
    )
      request.headers.set("Idempotency-Key", idempotencyKey());
    return request;
  },
};

export function configure(url: string) {
  baseUrl = url.replace(/\/$/, "");
  api = createClient<paths>({ baseUrl });
  api.use(auth, idempotent);
}

/** call unwraps an openapi-fetch result: the data, or an ApiError with the problem. */
export async function call<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let r: Awaited<typeof p>;
  try {
    r = await p;
  } catch (e) {
    throw new ApiError(0, {
      type: "urn:horizon:problem:unavailable",
      title: "The API cannot be reached",
      status: 503,
      detail: String(e instanceof Error ? e.message : e),
    });
  }
  if (r.response.ok) return r.data as T;
  const err = r.error as Problem | undefined;
  throw new ApiError(
    r.response.status,
    err && typeof err === "object" && "title" in err
      ? err
      : ({ type: "urn:horizon:problem:internal", title: r.response.statusText || "Request failed", status: r.response.status } as Problem),
    r.response.headers.get("ETag") ?? undefined,
  );
}

export function idempotencyKey(): string {
  return crypto.randomUUID();
}
