// What an event of GET /v1/events changes, as the query keys to invalidate: the console
// follows the stream instead of polling.
import type { QueryKey } from "@tanstack/react-query";
import type { HorizonEvent } from "../client";
import { isoKey, isosKey } from "./isos";
import { stackKey, stacksKey, startupKey } from "./stacks";

/**
 * eventKeys is what one event makes stale. Every event may change the stack list and the
 * startup order; a stack's event (a run's and a step's carry stack_id) its ["stack", id]
 * prefix; an ISO's event, and those of its runs and stages, carry its id (iso_id) instead of
 * a stack's: the ISO list and ["iso", id].
 */
export function eventKeys(e: HorizonEvent): QueryKey[] {
  const keys: QueryKey[] = [];
  const iso = e.type === "iso" ? e.id : e.iso_id;
  if (iso) keys.push(isosKey, isoKey(iso));
  keys.push(stacksKey, startupKey);
  const stack = e.stack_id ?? (e.type === "stack" ? e.id : undefined);
  if (stack) keys.push(stackKey(stack));
  return keys;
}

/**
 * streamKeys is what a message of the events stream makes stale: an event's keys, everything
 * after a `reset` (events were missed), nothing for any other message.
 */
export function streamKeys(type: string, data: unknown): QueryKey[] | "all" {
  if (type === "reset") return "all";
  if (type !== "event") return [];
  return eventKeys(data as HorizonEvent);
}

/**
 * mergeKeys adds what one message makes stale to what earlier ones of the same moment did,
 * each key once: a burst of events (a run starting: the run's, each step's) is then one
 * refetch of each query rather than one per event, each cancelling the one before.
 */
export function mergeKeys(into: QueryKey[] | "all", keys: QueryKey[] | "all"): QueryKey[] | "all" {
  if (into === "all" || keys === "all") return "all";
  const seen = new Set(into.map((k) => JSON.stringify(k)));
  const out = [...into];
  for (const k of keys)
    if (!seen.has(JSON.stringify(k))) {
      seen.add(JSON.stringify(k));
      out.push(k);
    }
  return out;
}
