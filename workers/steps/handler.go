package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/announce"
	"horizon/shared/answers"
	"horizon/shared/events"
	"horizon/shared/gate"
	"horizon/shared/gitsource"
	"horizon/shared/horizon"
	"horizon/shared/metrics"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/terraform"
)

// Handler runs step:run tasks. Every field is required and safe for concurrent use.
type Handler struct {
	DB        *pgxpool.Pool
	Redis     redis.UniversalClient
	Box       *secrets.Box
	Queues    queue.Queues
	Enqueue   queue.Enqueuer
	Gate      *gate.Gate
	Git       *gitsource.Cache
	Terraform *terraform.Runner
	Logs      LogFactory
	Events    *events.Publisher
	Log       *slog.Logger
	// Namespace prefixes the Redis cancel channel.
	Namespace string
	// GateWait is how long the first waiter of a busy node waits inside the handler before
	// handing its slot back (gate.Gate.Acquire).
	GateWait time.Duration
	// Heartbeat is how often a running attempt proves it is alive and checks for cancellation.
	Heartbeat time.Duration
	// ScriptSSHTimeout bounds the wait for a new machine's SSH server to answer.
	ScriptSSHTimeout time.Duration
	// VMSSHPort is the machine's SSH port when its module has no "ssh_port" output; 0 is 22.
	VMSSHPort int
	// Metrics records each build's wait for its node's gate, for /metrics.
	Metrics *metrics.Recorder
}

// ProcessTask implements asynq.Handler.
func (h *Handler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p queue.StepRun
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("decode %s: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	log := h.Log.With("step_id", p.StepID, "attempt", p.Attempt)
	w, err := h.load(ctx, p)
	var missing *goneError
	switch {
	case errors.Is(err, errStale):
		log.DebugContext(ctx, "stale delivery ignored")
		return nil
	case errors.As(err, &missing):
		// Permanent: fail now, and give the node's line to the steps behind.
		LeaveLine(ctx, h.Gate, w.step, log)
		return h.finish(ctx, w, horizon.StepFailed, w.masker.Mask(missing.Error()), nil)
	case err != nil:
		return err // transient: Postgres; Asynq retries
	}
	log = log.With("run_id", w.run.ID, "job", w.step.Job, "execution", deref(w.step.ExecutionIndex))
	if w.run.State == horizon.RunCanceling {
		LeaveLine(ctx, h.Gate, w.step, log)
		return h.finish(ctx, w, horizon.StepCanceled, "canceled before it started", nil)
	}
	if w.step.OnlyIfChanged && w.inputsErr == nil && w.exec.AppliedHash != nil &&
		w.effective.Hash(w.exec.Commit, answers.Attachments(w.exec.Config)) == *w.exec.AppliedHash {
		// It is here only because a job it depends on ran; that job's outputs did not change.
		LeaveLine(ctx, h.Gate, w.step, log)
		return h.finishSkipped(ctx, w, "inputs unchanged")
	}

	lease, release, owned, err := Claim(ctx, h.DB, h.Gate, h.Metrics, h.GateWait, w.step, log)
	if err != nil {
		return err
	}
	// Released after Terraform has exited (the work below returned).
	defer release()
	if !owned {
		log.DebugContext(ctx, "superseded before it started")
		return nil
	}
	h.announce().Publish(ctx, h.event(w, horizon.StepRunning, ""))

	watched, stopWatch := h.watch(ctx, w)
	defer stopWatch()

	logs := h.Logs.Open(w.run.ID, w.stack.ID, w.step, w.masker)
	out := &stepLog{w: logs}
	end, err := h.attempt(ctx, watched, w, out, lease)
	// The log is closed — every line in Redis and Postgres — before the step is finished:
	// finishing advances the run, which may end it and write its end of log, and a follower
	// reading to that end must have found every line before it.
	if cerr := logs.Close(context.WithoutCancel(ctx)); cerr != nil {
		log.WarnContext(ctx, "close step log", "error", cerr)
	}
	if err != nil {
		return err
	}
	return h.finish(ctx, w, end.state, end.line, end.result)
}

// ending is how an attempt ends: the step's state, its error line, what a success produced.
type ending struct {
	state  horizon.StepState
	line   string
	result *outcome
}

// attempt runs the step's work and says how it ends; an error means the attempt does not end
// the step (it is handed back to Asynq).
func (h *Handler) attempt(ctx, work context.Context, w *stepWork, out *stepLog, lease *gate.Lease) (ending, error) {
	out.horizon("%s of %s[%d] started (attempt %d)", w.step.Kind, w.step.Job, deref(w.step.ExecutionIndex), w.step.Attempt)
	if wait := time.Since(deref(w.step.ReadyAt)); lease != nil && wait > time.Second {
		out.horizon("waited %s for node %s to be free", wait.Round(time.Second), *w.step.Node)
	}
	var result outcome
	var err error
	switch w.step.Kind {
	case horizon.StepApply:
		result, err = h.apply(work, w, out, lease)
	case horizon.StepDestroy:
		result, err = h.destroy(work, w, out)
	default:
		err = fmt.Errorf("unknown step kind %q", w.step.Kind)
	}
	if err != nil {
		switch cause := context.Cause(work); {
		case errors.Is(cause, ErrCanceled):
			out.horizon("canceled: Terraform was interrupted; nothing is rolled back")
			return ending{state: horizon.StepCanceled, line: "canceled"}, nil
		case errors.Is(err, gate.ErrLost):
			out.horizon("lost the node's build gate: stopped, and will be retried")
			return ending{}, fmt.Errorf("step %s: %w", w.step.ID, err)
		case ctx.Err() != nil:
			// The worker is shutting down: Asynq gives the task back, and the attempt resumes.
			return ending{}, ctx.Err()
		}
		line := w.masker.Mask(FirstLine(err.Error()))
		out.horizon("failed: %s", line)
		return ending{state: horizon.StepFailed, line: line}, nil
	}
	out.horizon("%s of %s[%d] succeeded", w.step.Kind, w.step.Job, deref(w.step.ExecutionIndex))
	return ending{state: horizon.StepSucceeded, result: &result}, nil
}

// finish records the attempt's end (and, for a success, what it produced) in one transaction,
// then advances the run. A result from a superseded attempt is discarded.
func (h *Handler) finish(ctx context.Context, w *stepWork, state horizon.StepState, errLine string, result *outcome) error {
	err := store.WithTx(ctx, h.DB, func(ctx context.Context, tx pgx.Tx) error {
		var errText *string
		if errLine != "" {
			errText = &errLine
		}
		owned, err := store.StepFinish(ctx, tx, w.step.ID, w.step.Attempt, state, errText, nil)
		if err != nil || !owned {
			return err
		}
		if result != nil {
			return result.record(ctx, tx, w)
		}
		return nil
	})
	if err != nil {
		return err
	}
	h.announce().Changed(ctx, w.run.ID, h.event(w, state, errLine))
	return nil
}

// finishSkipped ends a step that turned out to have nothing to do.
func (h *Handler) finishSkipped(ctx context.Context, w *stepWork, reason string) error {
	owned, err := store.StepFinish(ctx, h.DB, w.step.ID, w.step.Attempt, horizon.StepSkipped, nil, &reason)
	if err != nil || !owned {
		return err
	}
	h.announce().Changed(ctx, w.run.ID, h.event(w, horizon.StepSkipped, ""))
	return nil
}

// event is a step's new state, as followers see it (the error line masked).
func (h *Handler) event(w *stepWork, state horizon.StepState, errLine string) events.Event {
	return events.Event{Type: events.Step, ID: w.step.ID, StackID: w.stack.ID, TeamID: w.stack.TeamID, RunID: w.run.ID,
		State: string(state), Job: w.step.Job, Execution: w.step.ExecutionIndex, Error: events.MaskError(w.masker, errLine)}
}

// announce is the after-commit path of the step's changes.
func (h *Handler) announce() announce.Announcer {
	return announce.Announcer{Events: h.Events, Redis: h.Redis, Enqueue: h.Enqueue, Queues: h.Queues, Namespace: h.Namespace, Log: h.Log}
}

// watch returns a context that ends when the run is canceled or when this attempt stops owning
// the step, and keeps the step's heartbeat fresh (see Watch).
func (h *Handler) watch(parent context.Context, w *stepWork) (context.Context, func()) {
	return Watch(parent, WatchOpts{DB: h.DB, Redis: h.Redis, Namespace: h.Namespace, Heartbeat: h.Heartbeat,
		Run: w.run.ID, Step: w.step.ID, Attempt: w.step.Attempt})
}

// FirstLine is an error's first line, at most 500 bytes: what a failed card shows.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
