// What a duplicate left out (the not_copied of POST /v1/stacks/{id}/duplicate), in words, for
// the notice the new draft opens with. The list is kept in the query cache under
// notCopiedKey(draft id) between the stack's page and the draft's form.
import type { Schemas } from "../api/client";
import { machineLabel } from "../numbering";

export type NotCopied = Schemas["FieldError"];

export const notCopiedKey = (stackId: string) => ["duplicate-not-copied", stackId] as const;

const FIELD = /^jobs\.([^.]+)\.executions\[(\d+)\]\.(.+)$/;

/** notCopiedLines turns each left-out field into "app #2 · address: why". */
export function notCopiedLines(items: NotCopied[]): string[] {
  return items.map((n) => {
    const m = FIELD.exec(n.field);
    if (!m) return `${n.field}: ${n.message}`;
    const [, job, index, rest] = m;
    const what = rest === "address_id" ? "address" : rest.startsWith("parameters.") ? rest.slice("parameters.".length) : rest;
    return `${machineLabel(job, Number(index))} · ${what}: ${n.message}`;
  });
}
