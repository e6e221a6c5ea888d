package isos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/announce"
	"horizon/shared/events"
	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/metrics"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/workers/steps"
)

// Handler runs iso:stage tasks. Every field is required unless it says otherwise; it is safe
// for concurrent use.
type Handler struct {
	DB      *pgxpool.Pool
	Redis   redis.UniversalClient
	Box     *secrets.Box
	Queues  queue.Queues
	Enqueue queue.Enqueuer
	Gate    *gate.Gate
	Logs    *logstream.Client
	Events  *events.Publisher
	Log     *slog.Logger
	// Namespace prefixes the Redis cancel channel.
	Namespace string
	// GateWait is how long the first waiter of a busy node waits inside the handler.
	GateWait time.Duration
	// Heartbeat is how often a running attempt proves it is alive and checks for a cancel.
	Heartbeat time.Duration
	// Metrics records each gated stage's wait for its node, for /metrics.
	Metrics *metrics.Recorder
	// DownloadAttempts (default 3) bounds the image download's attempts. RetryBackoff (default
	// 10 s) is the first pause between attempts of a download or of a Proxmox call that failed
	// transiently; it doubles after each.
	DownloadAttempts int
	RetryBackoff     time.Duration
	// TaskPoll is how often a Proxmox task is polled while it runs (default 500 ms).
	TaskPoll time.Duration
	// ProxmoxTimeout bounds one Proxmox API request (default 30 s).
	ProxmoxTimeout time.Duration
}

// result is what a finished stage reports: why it had nothing to do (skipped), or what it did,
// and the outputs to record with the step's end.
type result struct {
	skipped bool
	reason  string
	outputs []output
}

// output is one ISOOutputSet: key "image" or "vm", or a clone by name; value nil removes it.
type output struct {
	key, clone string
	value      any
}

// ProcessTask implements asynq.Handler.
func (h *Handler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p queue.StepRun
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("decode %s: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	log := h.Log.With("step_id", p.StepID, "attempt", p.Attempt)
	w, err := h.load(ctx, p)
	if errors.Is(err, errStale) {
		log.DebugContext(ctx, "stale delivery ignored")
		return nil
	}
	if err != nil {
		return err // transient: Postgres; Asynq retries
	}
	log = log.With("run_id", w.run.ID, "iso_id", w.iso.ID, "stage", w.label())
	if w.run.State == horizon.RunCanceling {
		steps.LeaveLine(ctx, h.Gate, w.step, log)
		return h.finish(ctx, w, horizon.StepCanceled, "canceled before it started", nil)
	}

	lease, release, owned, err := steps.Claim(ctx, h.DB, h.Gate, h.Metrics, h.GateWait, w.step, log)
	if err != nil {
		return err
	}
	defer release()
	if !owned {
		log.DebugContext(ctx, "superseded before it started")
		return nil
	}
	h.announce().Publish(ctx, h.event(w, horizon.StepRunning, ""))

	watched, stop := steps.Watch(ctx, steps.WatchOpts{DB: h.DB, Redis: h.Redis, Namespace: h.Namespace, Heartbeat: h.Heartbeat,
		Run: w.run.ID, Step: w.step.ID, Attempt: w.step.Attempt})
	defer stop()
	// The stage stops when the run is canceled, and, for a gated stage, when the lease is lost.
	guarded, stopGuard := lease.Guard(watched)
	defer stopGuard()

	lw := h.Logs.NewWriter(w.run.ID, w.iso.ID, w.masker)
	out := &stageLog{w: lw, step: w.step}
	state, line, res, err := h.attempt(ctx, guarded, w, out, lease)
	// Closed before the stage is finished: finishing advances the run, which may end it and
	// write its end of log, and a follower reading to that end must have every line before it.
	if cerr := lw.Close(context.WithoutCancel(ctx)); cerr != nil {
		log.WarnContext(ctx, "close stage log", "error", cerr)
	}
	if err != nil {
		return err
	}
	return h.finish(ctx, w, state, line, res)
}

// attempt runs the stage and says how it ends (state, error line, result); an error means the
// attempt does not end the stage (it is handed back to Asynq).
func (h *Handler) attempt(ctx, run context.Context, w *work, out *stageLog, lease *gate.Lease) (horizon.StepState, string, *result, error) {
	out.say("%s of ISO %s started (attempt %d)", w.label(), w.iso.Name, w.step.Attempt)
	if wait := time.Since(deref(w.step.ReadyAt)); lease != nil && wait > time.Second {
		out.say("waited %s for node %s to be free", wait.Round(time.Second), w.iso.Node)
	}
	res, err := h.runStage(run, w, out)
	if err != nil {
		switch cause := context.Cause(run); {
		case errors.Is(cause, steps.ErrCanceled):
			out.say("canceled: %s stopped; what it made so far stays", w.label())
			return horizon.StepCanceled, "canceled", nil, nil
		case errors.Is(cause, gate.ErrLost):
			out.say("lost the node's build gate: stopped, and will be retried")
			return "", "", nil, fmt.Errorf("step %s: %w", w.step.ID, cause)
		case ctx.Err() != nil:
			return "", "", nil, ctx.Err() // the worker is shutting down: Asynq gives the task back
		}
		line := w.masker.Mask(steps.FirstLine(err.Error()))
		out.say("failed: %s", line)
		return horizon.StepFailed, line, nil, nil
	}
	if res.skipped {
		out.say("%s skipped: %s", w.label(), res.reason)
		return horizon.StepSkipped, "", &res, nil
	}
	out.say("%s succeeded: %s", w.label(), res.reason)
	return horizon.StepSucceeded, "", &res, nil
}

// runStage dispatches on the step's kind.
func (h *Handler) runStage(ctx context.Context, w *work, out *stageLog) (result, error) {
	c, err := h.client(w)
	if err != nil {
		return result{}, err
	}
	switch w.step.Kind {
	case horizon.StepISOPreflight:
		return h.preflight(ctx, c, w, out)
	case horizon.StepISOImage:
		return h.image(ctx, c, w, out)
	case horizon.StepISOVMCreate:
		return h.vmCreate(ctx, c, w, out)
	case horizon.StepISOVMConfigure:
		return h.vmConfigure(ctx, c, w, out)
	case horizon.StepISOTemplate:
		return h.template(ctx, c, w, out)
	case horizon.StepISOClone:
		return h.clone(ctx, c, w, out)
	case horizon.StepISORemove:
		return h.remove(ctx, c, w, out)
	}
	return result{}, fmt.Errorf("unknown ISO step kind %q", w.step.Kind)
}

// finish records the attempt's end — with, unless it failed, its reason and outputs — in one
// transaction, then advances the run. A result from a superseded attempt is discarded.
func (h *Handler) finish(ctx context.Context, w *work, state horizon.StepState, errLine string, res *result) error {
	err := store.WithTx(ctx, h.DB, func(ctx context.Context, tx pgx.Tx) error {
		var errText, reason *string
		if errLine != "" {
			errText = &errLine
		}
		if res != nil && res.reason != "" {
			reason = &res.reason
		}
		owned, err := store.StepFinish(ctx, tx, w.step.ID, w.step.Attempt, state, errText, reason)
		if err != nil || !owned || res == nil {
			return err
		}
		for _, o := range res.outputs {
			var value any
			if o.value != nil {
				b, err := json.Marshal(o.value)
				if err != nil {
					return fmt.Errorf("encode output %s: %w", o.key, err)
				}
				value = string(b)
			}
			if err := store.ISOOutputSet(ctx, tx, w.iso.ID, o.key, o.clone, value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	h.announce().Changed(ctx, w.run.ID, h.event(w, state, errLine))
	return nil
}

// event is a stage's new state, as followers see it (the error line masked).
func (h *Handler) event(w *work, state horizon.StepState, errLine string) events.Event {
	return events.Event{Type: events.Step, ID: w.step.ID, ISOID: w.iso.ID, RunID: w.run.ID, State: string(state),
		Job: w.step.Job, Execution: w.step.ExecutionIndex, Error: events.MaskError(w.masker, errLine)}
}

// announce is the after-commit path of the stage's changes.
func (h *Handler) announce() announce.Announcer {
	return announce.Announcer{Events: h.Events, Redis: h.Redis, Enqueue: h.Enqueue, Queues: h.Queues, Namespace: h.Namespace, Log: h.Log}
}

// stageLog is a stage's log: Horizon's own lines, under the step's stage and clone index.
type stageLog struct {
	w    *logstream.Writer
	step horizon.Step
}

// say writes one line.
func (l *stageLog) say(format string, args ...any) {
	// Line refuses only once the writer is closing, after the stage returned.
	_ = l.w.Line(l.step.ID, l.step.Job, deref(l.step.ExecutionIndex), logstream.Horizon, fmt.Sprintf(format, args...))
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
