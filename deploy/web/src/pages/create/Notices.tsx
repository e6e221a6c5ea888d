// What the stack form says around its fields: what a duplicate left out, the problems to fix
// (the summary that takes the focus when a save or deploy is refused), the quota the stack
// would take, and what changed meanwhile when a save found the stack changed.
import type { Ref } from "react";
import type { quotaHints } from "../../quota/usage";
import { type NotCopied, notCopiedLines } from "../../stacks/duplicate";
import { plural } from "../common";

export function DuplicateNotice({ from, items }: { from: string; items: NotCopied[] }) {
  return (
    <div className="notice" role="status" data-testid="duplicate-notice">
      <p>
        A copy of {from}: its answers were copied{items.length ? "; not these:" : ", all of them."}
      </p>
      {items.length > 0 && (
        <ul>
          {notCopiedLines(items).map((l) => (
            <li key={l}>{l}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function ErrorSummary({
  ref,
  live,
  count,
  items,
}: {
  ref: Ref<HTMLDivElement>;
  live: boolean;
  count: number;
  items: { label: string; message: string }[];
}) {
  return (
    <div
      className="problem error-summary"
      role="alert"
      tabIndex={-1}
      ref={ref}
      aria-labelledby="error-summary-title"
      data-testid="error-summary"
    >
      <strong id="error-summary-title">
        {live ? `${plural(count, "problem")} to fix before saving:` : `${plural(count, "thing")} to fix before it can deploy:`}
      </strong>
      <ul>
        {items.map((o, i) => (
          <li key={i}>
            <strong>{o.label}</strong> {o.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function QuotaHints({ hints }: { hints: ReturnType<typeof quotaHints> }) {
  return (
    // The live region wraps the list: a role on the ul itself would take its list semantics
    // away (axe: listitem).
    <div role="status" aria-label="Quota">
      <ul className="quota-hints">
        {hints.map((h) => (
          <li key={h.dimension} data-dimension={h.dimension} className={h.over ? "problem" : "muted"}>
            {h.text}
            {h.over ? ": more than the team has left" : ""}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function ChangedMeanwhile({ live, fields }: { live: boolean; fields: string[] }) {
  return (
    <div className="problem" role="status">
      {live ? "This stack was changed meanwhile" : "Someone saved this draft meanwhile"}; the form now shows their version. What differed
      from yours:
      <ul>
        {fields.map((f) => (
          <li key={f}>
            <code>{f}</code>
          </li>
        ))}
      </ul>
    </div>
  );
}
