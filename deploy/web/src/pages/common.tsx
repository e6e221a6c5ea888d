import { useCallback, useEffect, useId, useRef, useState } from "react";
import { ApiError } from "../api/client";
import { href } from "../router";
import { typedNameMatches } from "../plan/plan";

/** Head is a table's header row: the columns' names and, when the user may act on the rows, an
 * Actions column. */
export function Head({ cols, actions = false }: { cols: string[]; actions?: boolean }) {
  return (
    <thead>
      <tr>
        {cols.map((c) => (
          <th scope="col" key={c}>
            {c}
          </th>
        ))}
        {actions && (
          <th scope="col">
            <span className="muted">Actions</span>
          </th>
        )}
      </tr>
    </thead>
  );
}

/** ifMatch is the If-Match header of a change to an object read at its version: a change of
 * one that changed meanwhile is refused (412). */
export const ifMatch = (o: { version: number }) => ({ "If-Match": `"${o.version}"` });

/** ProblemBox shows an API problem in plain words: its title and detail, and links to the
 * stacks it is about (its stacks member, e.g. those using an ISO that cannot be deleted). */
export function ProblemBox({ error }: { error: unknown }) {
  if (!error) return null;
  if (error instanceof ApiError) {
    const p = error.problem;
    const stacks = p.stacks ?? [];
    const hint =
      stacks.length > 0
        ? ""
        : error.status === 409
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
        {stacks.length > 0 && (
          <div className="small">
            Stacks:{" "}
            {stacks.map((st, i) => (
              <span key={st.id}>
                {i > 0 && ", "}
                <a href={href(`/stacks/${st.id}`)}>{st.name}</a>
              </span>
            ))}
          </div>
        )}
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

const runKinds: Record<string, string> = {
  deploy: "deploy",
  reapply: "re-apply",
  retry: "retry",
  run_again: "run again",
  upgrade: "template upgrade",
  remove: "removal",
  action: "action",
  iso_build: "build",
  iso_remove: "removal",
};

/** runKindLabel is a run's kind in words: "run again", not "run_again". */
export function runKindLabel(kind: string): string {
  return runKinds[kind] ?? kind.replace(/_/g, " ");
}

/** plural is a count and its noun: "1 thing", "3 things" (never "thing(s)"). */
export function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : nouns}`;
}

// Built once: toLocaleString builds a formatter at every call, and a page draws many dates.
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/** when is a moment as the reader's calendar and clock say it: "5 Dec 2026, 14:03"; "" for none. */
export function when(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? "" : dateTime.format(d);
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

/** StateChanges is an object's state history (a stack's, an ISO's), newest first. */
export function StateChanges({
  items,
}: {
  items: { from: string | null; to: string; at: string; actor_id: string | null; actor_name?: string | null; error: string | null }[];
}) {
  return (
    <table>
      <caption>State changes</caption>
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Change</th>
          <th scope="col">By</th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        {items.map((h, i) => (
          <tr key={i}>
            <td>{when(h.at)}</td>
            <td>
              {h.from ?? "—"} → {h.to}
            </td>
            <td>{h.actor_id ? (h.actor_name ?? h.actor_id.slice(0, 8)) : "Horizon"}</td>
            <td>{h.error ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** How long a note such as "Copied" stays. */
export const FLASH_MS = 3000;

/**
 * useFlash is a short note ("Copied") that clears itself after FLASH_MS: a second flash
 * restarts the wait, and an unmounted component's timer is cancelled.
 */
export function useFlash(): [string, (text: string) => void] {
  const [note, setNote] = useState("");
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const flash = useCallback((text: string) => {
    setNote(text);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => setNote(""), FLASH_MS);
  }, []);
  return [note, flash];
}

/**
 * ShownOnce is a secret the API shows only once (a minted token, a webhook's signing secret):
 * what it is, the value with Copy, and "Done, hide it".
 */
export function ShownOnce({
  title,
  value,
  valueProps,
  onDone,
  ...box
}: {
  title: React.ReactNode;
  value: string;
  /** The value's data-* attribute (what tests and scripts read it by). */
  valueProps: Record<`data-${string}`, string>;
  onDone: () => void;
  "data-testid"?: string;
}) {
  const [note, flash] = useFlash();
  return (
    <div className="minted" role="status" {...box}>
      <p>{title}</p>
      <p>
        <code className="wrap" {...valueProps}>
          {value}
        </code>{" "}
        <button
          type="button"
          onClick={async () => {
            await navigator.clipboard.writeText(value);
            flash("Copied");
          }}
        >
          Copy
        </button>{" "}
        <span className="small">{note}</span>
      </p>
      <button type="button" onClick={onDone}>
        Done, hide it
      </button>
    </div>
  );
}

/**
 * Secret: Copy reveals into the clipboard without rendering; Reveal shows it for 30 s. reveal is
 * the route that reveals it (a job's output, an action run's), recorded by the API.
 */
export function Secret({ name, reveal }: { name: string; reveal: () => Promise<{ value: string }> }) {
  const [shown, setShown] = useState<string | null>(null);
  const [note, flash] = useFlash();
  const [err, setErr] = useState<unknown>(null);
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  return (
    <span className="secret">
      <code>
        {shown ?? (
          <>
            <span className="visually-hidden">hidden secret</span>
            <span aria-hidden="true">••••••••</span>
          </>
        )}
      </code>{" "}
      <button
        type="button"
        onClick={async () => {
          setErr(null);
          try {
            const r = await reveal();
            await navigator.clipboard.writeText(r.value);
            flash("Copied");
          } catch (e) {
            setErr(e);
          }
        }}
        aria-label={`Copy ${name}`}
      >
        Copy
      </button>{" "}
      {shown === null ? (
        <button
          type="button"
          aria-label={`Reveal ${name}`}
          onClick={async () => {
            setErr(null);
            try {
              setShown((await reveal()).value);
              clearTimeout(timer.current);
              timer.current = setTimeout(() => setShown(null), 30_000);
            } catch (e) {
              setErr(e);
            }
          }}
        >
          Reveal
        </button>
      ) : (
        <button type="button" onClick={() => setShown(null)} aria-label={`Hide ${name}`}>
          Hide
        </button>
      )}
      <span role="status" className="small">
        {note}
      </span>
      <ProblemBox error={err} />
    </span>
  );
}

/**
 * Menu is a disclosure menu (a details element): it closes on Escape (the focus back on its
 * button), on a click outside it, when an item is chosen, and when closeOn changes (the run
 * shown, say), so that it never stays open over a page that moved on.
 */
export function Menu({ label, closeOn, children }: { label: string; closeOn?: unknown; children: (close: () => void) => React.ReactNode }) {
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDetailsElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: closing when closeOn changes is the point
  useEffect(() => setOpen(false), [closeOn]);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      setOpen(false);
      ref.current?.querySelector("summary")?.focus();
    };
    const onDown = (e: MouseEvent) => {
      if (ref.current && !ref.current.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener("keydown", onKey);
    document.addEventListener("mousedown", onDown);
    return () => {
      document.removeEventListener("keydown", onKey);
      document.removeEventListener("mousedown", onDown);
    };
  }, [open]);
  return (
    <details className="menu" ref={ref} open={open} onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>{label}</summary>
      <div role="menu">{children(() => setOpen(false))}</div>
    </details>
  );
}

/**
 * ConfirmDialog is the one confirmation of a destructive action: what it does (title and
 * children), the object's name typed when name is given (the button waits for it, Enter
 * confirms once it may: a stack's removal, a subscription's deletion), and the safe answer one
 * click away. The API's refusal is shown in the dialog.
 */
export function ConfirmDialog({
  title,
  children,
  what,
  name,
  confirm,
  run,
  onDone,
  onCancel,
}: {
  title: React.ReactNode;
  children?: React.ReactNode;
  /** What is confirmed, named in the label of the typed name ("stack"). */
  what?: string;
  /** The name to type; none: the button confirms at once. */
  name?: string;
  /** The confirming button's text ("Yes, remove"). */
  confirm: string;
  run: () => Promise<unknown>;
  onDone?: () => void;
  onCancel: () => void;
}) {
  const [typed, setTyped] = useState("");
  const [err, setErr] = useState<unknown>(null);
  const id = useId();
  const ok = name === undefined || typedNameMatches(typed, name);
  const go = async () => {
    setErr(null);
    try {
      await run();
      onDone?.();
    } catch (e) {
      setErr(e);
    }
  };
  return (
    <div className="confirm block" role="alertdialog" aria-labelledby={`${id}-title`}>
      <strong id={`${id}-title`}>{title}</strong>
      {children}
      {name !== undefined && (
        <p>
          <label htmlFor={`${id}-typed`}>
            Type the {what}'s name, <strong>{name}</strong>, to confirm:
          </label>{" "}
          <input
            id={`${id}-typed`}
            value={typed}
            autoComplete="off"
            autoFocus
            onChange={(e) => setTyped(e.target.value)}
            onKeyDown={(e) => {
              if (e.key !== "Enter") return;
              e.preventDefault();
              if (ok) void go();
            }}
          />
        </p>
      )}
      <div className="actions">
        <button type="button" className="danger" disabled={!ok} onClick={() => void go()}>
          {confirm}
        </button>
        <button type="button" onClick={onCancel}>
          No
        </button>
      </div>
      <ProblemBox error={err} />
    </div>
  );
}
