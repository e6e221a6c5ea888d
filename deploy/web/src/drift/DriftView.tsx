// The Drift section of a stack's page: the last check, a failed check's reason, the findings
// (./drift decides their order, wording and the buttons), "Check now", and per finding
// "Re-apply this job" (the run-again of that machine) and "Accept" (with a reason, If-Match the
// finding's version). A check runs in the workers: after "Check now" the stack is re-read every
// 2 s until its check time moves, for at most a minute (a check that finds nothing new sends no
// event); everything else refreshes from GET /v1/events like the rest of the page.
import { stackKey, stackQuery, stacksKey } from "../api/queries/stacks";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api, ApiError, call, type Stack } from "../api/client";
import { Head, ProblemBox, when } from "../pages/common";
import {
  checkDone,
  driftButtons,
  driftHeadline,
  findingChange,
  findingMachine,
  findingProperty,
  findingWho,
  ifMatch,
  lastCheck,
  sortFindings,
  type CheckMark,
  type DriftFinding,
} from "./drift";

const POLL_MS = 2000;
const POLL_FOR_MS = 60_000;

export function DriftSection({ stack, role }: { stack: Stack; role: string | undefined }) {
  const id = stack.id;
  const qc = useQueryClient();
  const [err, setErr] = useState<unknown>(null);
  const [sent, setSent] = useState<(CheckMark & { at: number }) | null>(null);
  const [accepting, setAccepting] = useState("");
  const [reason, setReason] = useState("");
  const [notice, setNotice] = useState("");
  const d = stack.drift;
  const waiting = !!sent && !checkDone(sent, d);
  // Stop waiting after POLL_FOR_MS: the result then comes with the next event or visit.
  useEffect(() => {
    if (!sent) return;
    const t = setTimeout(() => setSent(null), POLL_FOR_MS);
    return () => clearTimeout(t);
  }, [sent]);
  // A second observer of the stack's query: it only adds the bounded re-read while a check is pending.
  useQuery({
    ...stackQuery(id),
    refetchInterval: (q) =>
      sent && q.state.data && !checkDone(sent, q.state.data.drift) && Date.now() - sent.at < POLL_FOR_MS ? POLL_MS : false,
  });
  const buttons = driftButtons(stack, role);
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: stackKey(id) });
    void qc.invalidateQueries({ queryKey: stacksKey });
  };
  const run = async (fn: () => Promise<unknown>) => {
    setErr(null);
    setNotice("");
    try {
      await fn();
      refresh();
      return true;
    } catch (e) {
      if (e instanceof ApiError && e.status === 412) refresh();
      setErr(e);
      return false;
    }
  };
  const checkNow = () =>
    void run(async () => {
      const r = await call(api.POST("/v1/stacks/{id}/drift-check", { params: { path: { id } } }));
      setSent({ checked_at: d.checked_at, failed_at: d.failed_at, at: Date.now() });
      setNotice(`Check queued for ${r.servers} Proxmox server${r.servers === 1 ? "" : "s"}.`);
    });
  const reapply = (f: DriftFinding) =>
    void run(async () => {
      await call(
        api.POST("/v1/stacks/{id}/jobs/{job}/executions/{n}/run-again", {
          params: { path: { id, job: f.job, n: String(f.execution) } },
        }),
      );
      setNotice(`Re-applying ${findingMachine(f)}: see the pipeline.`);
    });
  const accept = (f: DriftFinding) =>
    void run(async () => {
      await call(
        api.POST("/v1/stacks/{id}/drift/findings/{finding}/accept", {
          params: { path: { id, finding: f.id }, header: { "If-Match": ifMatch(f) } },
          body: { reason: reason.trim() },
        }),
      );
      setAccepting("");
      setReason("");
    });
  const findings = sortFindings(d.findings);
  const headline = driftHeadline(d);
  return (
    <section className="drift" aria-labelledby="drift-title">
      <h2 id="drift-title">Drift</h2>
      <p className="small muted" data-testid="drift-checked">
        {lastCheck(d, when)}
        {headline && <> · {headline}</>}
        {buttons.check && (
          <>
            {" "}
            <button type="button" className="small" disabled={waiting} onClick={checkNow}>
              {waiting ? "Checking…" : "Check now"}
            </button>
          </>
        )}
      </p>
      {notice && (
        <p role="status" className="small">
          {notice}
        </p>
      )}
      {d.check_error && (
        <p className="problem" data-testid="drift-check-error">
          The last check failed{d.failed_at ? ` (${when(d.failed_at)})` : ""}: {d.check_error}. Nothing was concluded from it.
        </p>
      )}
      <ProblemBox error={err} />
      {findings.length > 0 && (
        <table className="drift-findings">
          <Head cols={["Machine", "Property", "Expected → actual", "Kind", "Since", "Changed by", "Actions"]} />
          <tbody>
            {findings.map((f) => (
              <tr key={f.id} data-finding={`${findingMachine(f)}.${f.path}`} className={f.accepted ? "muted" : undefined}>
                <td>{findingMachine(f)}</td>
                <td>
                  <code>{findingProperty(f)}</code>
                </td>
                <td>
                  <code>{findingChange(f)}</code>
                </td>
                <td>
                  <span className={`drift-kind drift-${f.kind}`}>{f.kind}</span>
                </td>
                <td>{when(f.since)}</td>
                <td>{findingWho(f, when)}</td>
                <td>
                  {f.accepted ? (
                    <span className="small" title={f.accepted.reason}>
                      accepted {when(f.accepted.at)}: {f.accepted.reason}
                    </span>
                  ) : (
                    <span className="actions">
                      {buttons.reapply && (
                        <button type="button" className="small" onClick={() => reapply(f)}>
                          Re-apply this job
                        </button>
                      )}
                      {buttons.accept && accepting !== f.id && (
                        <button
                          type="button"
                          className="small"
                          onClick={() => {
                            setAccepting(f.id);
                            setReason("");
                          }}
                        >
                          Accept
                        </button>
                      )}
                    </span>
                  )}
                  {accepting === f.id && (
                    <form
                      className="accept-drift"
                      onSubmit={(e) => {
                        e.preventDefault();
                        if (reason.trim()) accept(f);
                      }}
                    >
                      <label>
                        Why is this change accepted?{" "}
                        <input value={reason} autoFocus maxLength={500} onChange={(e) => setReason(e.target.value)} />
                      </label>{" "}
                      <button type="submit" className="small" disabled={!reason.trim()}>
                        Accept
                      </button>{" "}
                      <button type="button" className="small" onClick={() => setAccepting("")}>
                        Cancel
                      </button>
                    </form>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** DriftBadge marks a drifted stack in the list. */
export function DriftBadge({ drifted }: { drifted: boolean }) {
  if (!drifted) return null;
  return (
    <span className="state drift-badge" title="Changed on Proxmox outside Horizon">
      drift
    </span>
  );
}
