import { useEffect, useState } from "react";
import { ApiError } from "../api/client";

/** ProblemBox shows an API problem in plain words: its title and detail. */
export function ProblemBox({ error }: { error: unknown }) {
  if (!error) return null;
  if (error instanceof ApiError) {
    const p = error.problem;
    const hint =
      error.status === 409
        ? "Something else is happening to it right now; wait for it to finish and try again."
        : error.status === 412
          ? "It changed while you were looking; the page was reloaded with the latest version."
          : error.status === 0 || error.status === 503
            ? "Check your connection; Horizon may be restarting."
            : "";
    return (
      <div className="problem" role="alert">
        <strong>{p.title}</strong>
        {p.detail && <span> — {p.detail}</span>}
        {hint && <div className="small">{hint}</div>}
      </div>
    );
  }
  return (
    <div className="problem" role="alert">
      <strong>Something went wrong</strong> — {String(error instanceof Error ? error.message : error)}
    </div>
  );
}

export function StateBadge({ state }: { state: string }) {
  return <span className={`state state-${state}`}>{state}</span>;
}

export function when(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** useDebounced is value once it has stayed the same for ms: what is sent as the user types. */
export function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}
