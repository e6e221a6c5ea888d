// PlanView draws what saving an edit of a deployed stack will do: counts as badges, then each
// touched execution in run order with its action and why, the cleanup scripts a destroy runs
// first, the addresses attached and freed, in which order a replacement goes, and what saving
// changes in the team's usage against what its quotas leave (usage, when known).
import type { Schemas } from "../api/client";
import { deltaLines } from "../quota/usage";
import { actionLabel, counts, entryName, reasonText, replacements, type Names, type Plan } from "./plan";

export function PlanView({
  plan,
  names,
  usage,
  environment = "",
}: {
  plan: Plan;
  names?: Names;
  usage?: Schemas["TeamUsage"];
  environment?: string;
}) {
  const c = counts(plan);
  const reps = replacements(plan);
  const delta = deltaLines(plan.resources, usage, environment);
  return (
    <section className="plan" aria-label="What saving does">
      <h2>What saving does</h2>
      {delta.length > 0 && (
        <ul className="quota-hints" aria-label="Quota change">
          {delta.map((d) => (
            <li key={d.dimension} data-dimension={d.dimension} className={d.over ? "problem" : "muted"}>
              {d.text}
              {d.over ? ": more than the team has left" : ""}
            </li>
          ))}
        </ul>
      )}
      {c.length === 0 ? (
        <p className="muted" data-plan="none">
          No machine is touched: saving runs nothing.
        </p>
      ) : (
        <>
          <p className="plan-counts">
            {c.map((x) => (
              <span key={x.action} className={`pbadge pbadge-${x.action}`} data-count={x.action}>
                {x.text}
              </span>
            ))}
            {plan.addresses.attach.length > 0 && (
              <span className="small muted"> · {plan.addresses.attach.length} address(es) attached</span>
            )}
            {plan.addresses.free.length > 0 && <span className="small muted"> · {plan.addresses.free.length} address(es) freed</span>}
          </p>
          {reps.map((r) => (
            <p key={r.job} className="small">
              {r.job}: replaced{" "}
              {r.order === "add-first"
                ? "by adding the new machine first, then removing the old one"
                : "by removing the old machine first, then adding the new one"}
              .
            </p>
          ))}
          <ol className="plan-order">
            {plan.order.map((e, i) => (
              <li key={i} data-plan-entry={entryName(e)} data-action={e.action}>
                <span className={`pbadge pbadge-${e.action}`}>{actionLabel[e.action]}</span> <strong>{entryName(e)}</strong>
                <span className="muted small">
                  {" "}
                  · {e.phase}
                  {e.vm_id != null && ` · VM ${e.vm_id}`}
                  {e.node && ` on ${e.node}`}
                </span>
                {e.because && e.because.length > 0 && (
                  <ul className="because">
                    {e.because.map((r, j) => (
                      <li key={j}>{reasonText(r, names)}</li>
                    ))}
                  </ul>
                )}
                {e.cleanup.length > 0 && <div className="small">First runs its cleanup: {e.cleanup.join(", ")}</div>}
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
