// The Notifications screen's pure logic: events and token scopes in plain words, the
// subscription form turned into the API's request bodies, and a delivery in a line.
import type { Schemas } from "../api/client";
import { list, str, type Values } from "../pages/ResourceForm";

export type Webhook = Schemas["Webhook"];
export type WebhookEvent = Schemas["WebhookEvent"];
export type WebhookKind = Schemas["WebhookKind"];
export type WebhookDelivery = Schemas["WebhookDelivery"];
export type TokenScope = Schemas["TokenScope"];

/** EVENTS is every event a subscription may want, in the order the form offers them. The
 * labels say what happened, not the wire name; the record type makes a new API event a
 * compile error here until it has words. */
const eventWords: Record<WebhookEvent, string> = {
  "run.finished": "A run finished (deploy, retry, removal…, with its result)",
  "stack.state_changed": "A stack changed state",
  "stack.drift.found": "Drift was found on a stack",
  "stack.drift.cleared": "A stack's drift was cleared",
  "action.finished": "An action run finished",
  "iso.built": "An ISO was built",
  "iso.failed": "An ISO build failed",
};
export const EVENTS = Object.keys(eventWords) as WebhookEvent[];

/** eventLabel is an event in words; the test message and events this console does not know
 * yet keep their name, dots as spaces. */
export function eventLabel(e: string): string {
  if (e === "webhook.test") return "Test message";
  return eventWords[e as WebhookEvent] ?? e.replace(/[._]/g, " ");
}

export const KINDS: { value: WebhookKind; label: string }[] = [
  { value: "standard", label: "Standard Webhooks (signed JSON, for bots)" },
  { value: "slack", label: "Slack incoming webhook" },
  { value: "mattermost", label: "Mattermost incoming webhook" },
];

/** GLOBAL is the team choice of a subscription to every team's events (admins only). */
export const GLOBAL = "global";

/** createBody is POST /v1/webhooks's body for the form's values: no team_id for a global one. */
export function createBody(v: Values): Schemas["WebhookCreate"] {
  const team = str(v, "team_id");
  return {
    name: str(v, "name"),
    url: str(v, "url"),
    kind: (str(v, "kind") || "standard") as WebhookKind,
    events: list(v, "events"),
    enabled: v.enabled === true,
    ...(team && team !== GLOBAL ? { team_id: team } : {}),
  };
}

/** editValues is the edit form's starting values for w. The URL starts empty: the API shows
 * only its scheme and host (the rest may be the destination's secret), so a blank URL keeps it. */
export function editValues(w: Webhook): Values {
  return { name: w.name, kind: w.kind, url: "", events: [...w.events], enabled: w.enabled };
}

/** updateBody is PATCH /v1/webhooks/{id}'s body: the fields that differ from initial (see
 * editValues), so that an unchanged URL is not sent and an unchanged enabled tests nothing. */
export function updateBody(v: Values, initial: Values): Schemas["WebhookUpdate"] {
  const out: Schemas["WebhookUpdate"] = {};
  if (str(v, "name") !== str(initial, "name")) out.name = str(v, "name");
  if (str(v, "kind") !== str(initial, "kind")) out.kind = str(v, "kind") as WebhookKind;
  if (str(v, "url") !== "") out.url = str(v, "url");
  const was = new Set(list(initial, "events")),
    now = list(v, "events");
  if (now.length !== was.size || now.some((e) => !was.has(e))) out.events = now;
  if ((v.enabled === true) !== (initial.enabled === true)) out.enabled = v.enabled === true;
  return out;
}

/** deliveryStatus is a delivery's outcome in words: its state and the last answer's status. */
export function deliveryStatus(d: Pick<WebhookDelivery, "state" | "last_status" | "attempts">): string {
  const http = d.last_status ? ` · HTTP ${d.last_status}` : d.attempts > 0 ? " · no answer" : "";
  return `${d.state}${http}`;
}

/** firstBytes is the start of an answer as the log's table shows it: one line, at most n characters. */
export function firstBytes(s: string | null, n = 80): string {
  if (!s) return "";
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

/** SCOPES are the token scopes offered when minting, each with what it opens in one line. */
export const SCOPES: { value: TokenScope; label: string }[] = [
  { value: "full", label: "Full — acts as you on every route" },
  { value: "deploy", label: "Deploy — read, plus deploy, retry, cancel, run again and run actions; no edits or removal" },
  { value: "read", label: "Read — every GET and live stream, nothing that changes anything" },
  { value: "prometheus", label: "Prometheus — only the Prometheus targets, for service discovery" },
];

/** scopeLabel is a scope's line of SCOPES, or the scope itself if this console does not know it. */
export function scopeLabel(s: string): string {
  return SCOPES.find((x) => x.value === s)?.label ?? s;
}

/** mayManage says whether the signed-in user may change subscriptions: viewers read only, and
 * so does a token narrower than full (the API's x-scope for every webhook write). */
export function mayManage(role: string | undefined, scope: TokenScope | undefined): boolean {
  return !!role && role !== "viewer" && (scope ?? "full") === "full";
}
