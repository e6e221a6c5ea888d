import { useState } from "react";
import type { Card, Pipeline } from "../api/client";
import { duration, layout, waitingText, type TemplatePhase } from "./layout";
import { machineLabel } from "../numbering";

export function PipelineView({
  pipeline,
  phases,
  now,
  onRunAgain,
}: {
  pipeline: Pipeline;
  phases?: TemplatePhase[];
  now: number;
  onRunAgain?: (c: Card) => void;
}) {
  const cols = layout(pipeline, phases);
  return (
    <div className="pipeline" role="list" aria-label="Pipeline">
      {cols.map((col) => (
        <section
          key={col.phase}
          className={`column col-${col.state}`}
          role="listitem"
          aria-label={col.number ? `Phase ${col.number}: ${col.name}` : col.name}
        >
          <h3>
            {col.number && <span className="phase-no">Phase {col.number}</span>} {col.name}
          </h3>
          {col.items.map((it) =>
            it.kind === "card" ? (
              <CardView key={it.key} c={it.card} now={now} onRunAgain={onRunAgain} />
            ) : (
              <GroupView key={it.key} job={it.job} cards={it.cards} counts={it.counts} state={it.state} now={now} onRunAgain={onRunAgain} />
            ),
          )}
        </section>
      ))}
    </div>
  );
}

function CardView({ c, now, onRunAgain }: { c: Card; now: number; onRunAgain?: (c: Card) => void }) {
  const d = duration(c.started_at, c.finished_at, now);
  const name = machineLabel(c.job, c.execution);
  return (
    <article className={`card state-${c.state}`} data-card={name} data-state={c.state} aria-label={`${name}: ${c.state}`}>
      <header>
        <strong>{name}</strong>
        <span className={`state state-${c.state}`}>{c.state === "held" ? "held" : c.state}</span>
      </header>
      <div className="small muted">
        {c.kind !== "apply" && <span>{c.kind.replace("_", " ")} · </span>}
        {c.node && <span>node {c.node} · </span>}
        {d && <span>{d}</span>}
        {c.attempt > 1 && <span> · attempt {c.attempt}</span>}
      </div>
      {c.state === "held" && <div className="small">Held: an earlier phase failed.</div>}
      {c.waiting_on && <div className="small waiting">{waitingText(c)}</div>}
      {c.error && (
        <div className="small card-error" title={c.error}>
          {c.error.split("\n")[0]}
        </div>
      )}
      {c.reason && <div className="small muted">{c.reason}</div>}
      {onRunAgain && c.allowed_actions.includes("run_again") && (
        <button type="button" className="small" onClick={() => onRunAgain(c)} aria-label={`Run again: ${name}`}>
          Run again
        </button>
      )}
    </article>
  );
}

function GroupView({
  job,
  cards,
  counts,
  state,
  now,
  onRunAgain,
}: {
  job: string;
  cards: Card[];
  counts: [string, number][];
  state: string;
  now: number;
  onRunAgain?: (c: Card) => void;
}) {
  const [open, setOpen] = useState(false);
  return (
    <article className={`card group state-${state}`} data-card={`${job}*`} data-state={state}>
      <header>
        <strong>
          {job} ×{cards.length}
        </strong>
        <span className={`state state-${state}`}>{state}</span>
      </header>
      <div className="small">{counts.map(([s, n]) => `${n} ${s}`).join(" · ")}</div>
      <button type="button" className="link small" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? "Hide" : "Show"} the {cards.length} executions
      </button>
      {open && cards.map((c) => <CardView key={c.step_id} c={c} now={now} onRunAgain={onRunAgain} />)}
    </article>
  );
}
