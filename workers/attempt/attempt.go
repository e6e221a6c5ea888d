package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/google/uuid"
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
)

// Lifecycle is what every attempt needs, whatever its kind. Every field is required; it is
// safe for concurrent use.
type Lifecycle struct {
	DB      *pgxpool.Pool
	Redis   redis.UniversalClient
	Gate    *gate.Gate
	Logs    *logstream.Client
	Events  *events.Publisher
	Enqueue queue.Enqueuer
	Queues  queue.Queues
	Log     *slog.Logger
	// Namespace prefixes the Redis cancel channel and the waiters' heartbeat keys.
	Namespace string
	// GateWait is how long the first waiter of a busy node waits inside the handler before
	// handing its slot back (gate.Gate.Acquire).
	GateWait time.Duration
	// Heartbeat is how often a running attempt proves it is alive and checks for a cancel.
	Heartbeat time.Duration
	// Metrics records each build's wait for its node's gate, for /metrics.
	Metrics *metrics.Recorder
	// Advance moves a run on (runs.Advancer.Advance). An attempt whose end it recorded runs it
	// in process once the node's gate is released, rather than enqueuing run:advance: a phase's
	// next steps are then queued without a task pick-up between. When it fails (Postgres or
	// Redis down, the worker stopping), run:advance is enqueued for another worker, and failing
	// that the reconciler finds the run.
	Advance func(ctx context.Context, run uuid.UUID) error
}

// Loaded is what every attempt loads, whatever its kind; a kind's work embeds it.
type Loaded struct {
	Step horizon.Step
	Run  horizon.Run
	// StackID and TeamID (a stack's step), or ISOID (an ISO's): whose step it is, for its
	// events and its log.
	StackID, TeamID, ISOID uuid.UUID
	// Masker hides every secret the step could print; its log and error line go through it.
	Masker *secrets.Masker
	// Label names the step in its log: "apply of web[0]", "image of ISO noble".
	Label string
	// ended: this delivery recorded the attempt's end, so the run is to be advanced.
	ended bool
}

func (l *Loaded) loaded() *Loaded { return l }

// Work is a kind's loaded work: a struct embedding Loaded.
type Work interface{ loaded() *Loaded }

// Kind is the work of one kind of step: all that a new kind of step writes.
type Kind[W Work] interface {
	// Load reads the rest of what the attempt needs from Postgres, given the step and its run
	// (and an empty masker) in a. ErrStale: the step is not of this kind. An error wrapping
	// *Gone, returned with the work loaded so far (at least a, with StackID or ISOID), fails
	// the step at once. Any other error is ours (Postgres) and transient: Asynq retries.
	Load(ctx context.Context, a Loaded) (W, error)
	// Unneeded is why the step has nothing to do, found before it claims its node; "" when it
	// has work. It must be "" for a step whose MayBeUnneeded is false: such a step is not
	// loaded until it is next at its node.
	Unneeded(w W) string
	// Do runs the work under ctx, which ends when the run is canceled (its cause ErrCanceled).
	// lease is the node's build gate (nil for a step that takes none); work that must stop
	// when it is lost runs under UnderLease. An error fails the step with its first line,
	// unless it says the lease was lost or the worker is stopping.
	Do(ctx context.Context, w W, log *Log, lease *gate.Lease) (Result, error)
}

// Preparer is a Kind with work that needs no node (for a build: checking the module out and
// terraform init): the lifecycle runs Prepare while the step waits for its node's build gate,
// so that the gate is held only for what needs the node. Prepare keeps what it made in w, for
// Do, which releases it. When the attempt does not go on to Do (the gate stayed busy, another
// attempt owns the step), the lifecycle calls the undo Prepare returned; a Prepare that fails
// leaves nothing behind, and its error fails the step as Do's would. Its log lines are held
// until the attempt owns the step, and dropped otherwise.
type Preparer[W Work] interface {
	Prepare(ctx context.Context, w W, log *Log) (undo func(), err error)
}

// Result is how work that did not fail ended.
type Result struct {
	// Skipped: the step had nothing to do; Reason says why. A success may give a Reason too
	// ("image cached"): it is kept with the step.
	Skipped bool
	Reason  string
	// Record writes what the step produced, in the transaction that finishes it; nil for none.
	Record func(ctx context.Context, tx pgx.Tx) error
}

// ErrStale: the delivery is for an attempt that no longer owns the step.
var ErrStale = errors.New("stale step delivery")

// Gone is an object the step names (a server, node, address, SSH key, ISO) that no longer
// exists or may no longer be used, typically deleted between the deploy and the step. Nothing
// brings it back, so the step fails at once with this message instead of being retried.
type Gone struct{ Msg string }

func (e *Gone) Error() string { return e.Msg }

// IfNotFound returns a *Gone with the message when err says the object is not found, else err.
func IfNotFound(err error, format string, args ...any) error {
	if errors.Is(err, horizon.ErrNotFound) {
		return &Gone{Msg: fmt.Sprintf(format, args...)}
	}
	return err
}

// Process runs one delivery of a step task of kind k: the whole lifecycle described in the
// package documentation. An error hands the task back to Asynq.
func Process[W Work](ctx context.Context, l *Lifecycle, k Kind[W], t *asynq.Task) (err error) {
	var p queue.StepRun
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("decode %s: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	log := l.Log.With("step_id", p.StepID, "attempt", p.Attempt)
	w, err := load(ctx, l, k, p)
	var gone *Gone
	switch {
	case errors.Is(err, ErrStale):
		log.DebugContext(ctx, "stale delivery ignored")
		return nil
	case errors.As(err, &gone):
		a := w.loaded()
		leaveLine(ctx, l.Gate, a.Step, log)
		err := l.finish(ctx, a, ending{state: horizon.StepFailed, line: a.Masker.Mask(gone.Error())})
		l.advance(ctx, a, log)
		return err
	case err != nil:
		return err
	}
	a := w.loaded()
	log = log.With("run_id", a.Run.ID, "step", a.Label)
	// Deferred first so that it runs last: after the node's gate is released, so that the next
	// build on the node does not wait for this run's advance.
	defer l.advance(ctx, a, log)
	// A panic anywhere else in the attempt (the kind's Unneeded, the claim, the log) fails the
	// step rather than leaving it running while Asynq retries the same bug.
	defer recovered(ctx, log, "attempt", func(perr error) {
		err = l.finish(context.WithoutCancel(ctx), a, ending{state: horizon.StepFailed, line: a.Masker.Mask(perr.Error())})
	})
	if a.Run.State == horizon.RunCanceling {
		leaveLine(ctx, l.Gate, a.Step, log)
		return l.finish(ctx, a, ending{state: horizon.StepCanceled, line: "canceled before it started"})
	}
	if reason := k.Unneeded(w); reason != "" {
		leaveLine(ctx, l.Gate, a.Step, log)
		return l.finish(ctx, a, ending{state: horizon.StepSkipped, result: Result{Skipped: true, Reason: reason}})
	}

	out := &Log{step: a.Step}
	prep := prepare(ctx, k, w, out, log)
	lease, release, owned, err := l.claim(ctx, a.Step, log)
	if err != nil || !owned {
		prep.abandon()
	}
	if err != nil {
		return err
	}
	// Released once the work has returned (for Terraform: after it has exited).
	defer release()
	if !owned {
		log.DebugContext(ctx, "superseded before it started")
		return nil
	}
	l.announcer().Publish(ctx, event(a, horizon.StepRunning, ""))

	watched, stopWatch := watch(ctx, watchOpts{DB: l.DB, Redis: l.Redis, Namespace: l.Namespace, Heartbeat: l.Heartbeat,
		Run: a.Run.ID, Step: a.Step.ID, Attempt: a.Step.Attempt, Log: log})
	defer stopWatch()

	if a.Step.State == horizon.StepRunning || a.Step.Attempt > 1 {
		// An earlier delivery or attempt ran the step, and its worker may have died between
		// streaming lines and storing them: they are stored now, before this attempt's.
		if _, err := l.Logs.StoreStreamed(ctx, a.Run.ID, a.owner()); err != nil {
			log.WarnContext(ctx, "store the lines of the run's log stream that log_lines lacks", "error", err)
		}
	}
	out.open(l.Logs.NewWriter(a.Run.ID, a.owner(), a.Masker))
	end, err := run(ctx, watched, k, w, out, lease, prep, log)
	// The log is closed — every line in Redis and Postgres — before the step is finished:
	// finishing advances the run, which may end it and write its end of log, and a follower
	// reading to that end must have found every line before it.
	if cerr := out.w.Close(context.WithoutCancel(ctx)); cerr != nil {
		log.WarnContext(ctx, "close step log", "error", cerr)
	}
	if err != nil {
		return err
	}
	return l.finish(ctx, a, end)
}

// load reads the step and its run, checks that the delivery is for the step's current
// attempt, and has the kind read the rest.
func load[W Work](ctx context.Context, l *Lifecycle, k Kind[W], p queue.StepRun) (W, error) {
	var none W
	if p.Gate != "" {
		// A step waiting behind others for its node reads nothing until it is next: its step
		// and work would be read for nothing each time it asks (at scale, most of a step's
		// queries). It only proves itself alive. A step whose work may turn out unneeded
		// (horizon.Step.MayBeUnneeded) reads everything at its first ask (gate.Behind), to
		// leave the line at once if so; so does an attempt not in the line. Any other answer
		// (ErrLeft, Redis down) goes the full way: the claim reports it.
		err := l.Gate.Behind(ctx, p.Gate, queue.StepTaskID(p.StepID, p.Attempt))
		if gate.IsBusy(err) && !l.waiting(ctx, p.Gate, p.StepID, p.Attempt) {
			return none, ErrStale
		}
		if gate.IsBusy(err) {
			return none, err
		}
	}
	step, err := store.StepGet(ctx, l.DB, p.StepID)
	if errors.Is(err, horizon.ErrNotFound) {
		return none, ErrStale
	}
	if err != nil {
		return none, err
	}
	if step.Attempt != p.Attempt || (step.State != horizon.StepQueued && step.State != horizon.StepRunning) {
		return none, ErrStale
	}
	run, err := store.RunGet(ctx, l.DB, step.RunID)
	if err != nil {
		return none, err
	}
	return k.Load(ctx, Loaded{Step: step, Run: run, Masker: &secrets.Masker{}})
}

// ending is how an attempt ends: the step's state, its error line, what the work produced.
type ending struct {
	state  horizon.StepState
	line   string
	result Result
}

// run runs the work and says how the attempt ends; an error means it does not end the step
// (the task is handed back to Asynq).
func run[W Work](ctx, watched context.Context, k Kind[W], w W, out *Log, lease *gate.Lease, prep *preparation, log *slog.Logger) (ending, error) {
	a := w.loaded()
	out.sayFirst("%s started (attempt %d)", a.Label, a.Step.Attempt)
	if ready := a.Step.ReadyAt; lease != nil && ready != nil && time.Since(*ready) > time.Second {
		wait := time.Since(*ready)
		out.sayFirst("waited %s for node %s to be free", wait.Round(time.Second), deref(a.Step.Node))
	}
	// What was prepared while waiting for the node comes next in the log.
	err := prep.wait()
	out.release()
	var res Result
	if err == nil {
		res, err = do(watched, k, w, out, lease, log)
	}
	if err != nil {
		var perr *PanicError
		switch cause := context.Cause(watched); {
		case errors.As(cause, &perr):
			line := a.Masker.Mask(perr.Error())
			out.Say("failed: %s", line)
			return ending{state: horizon.StepFailed, line: line}, nil
		case errors.Is(cause, ErrCanceled):
			out.Say("canceled: %s was interrupted; what it did so far stays, nothing is rolled back", a.Label)
			return ending{state: horizon.StepCanceled, line: "canceled"}, nil
		case errors.Is(err, gate.ErrLost):
			out.Say("lost the node's build gate: stopped, and will be retried")
			return ending{}, fmt.Errorf("step %s: %w", a.Step.ID, err)
		case ctx.Err() != nil:
			// The worker is shutting down: Asynq gives the task back, and the attempt resumes.
			return ending{}, ctx.Err()
		}
		line := a.Masker.Mask(FirstLine(err.Error()))
		out.Say("failed: %s", line)
		return ending{state: horizon.StepFailed, line: line}, nil
	}
	if res.Skipped {
		out.Say("%s skipped: %s", a.Label, res.Reason)
		return ending{state: horizon.StepSkipped, result: res}, nil
	}
	if res.Reason != "" {
		out.Say("%s succeeded: %s", a.Label, res.Reason)
	} else {
		out.Say("%s succeeded", a.Label)
	}
	return ending{state: horizon.StepSucceeded, result: res}, nil
}

// do runs the kind's work. A panic is a bug of ours that another attempt would hit again:
// it fails the step, and the worker's log has the stack.
func do[W Work](ctx context.Context, k Kind[W], w W, out *Log, lease *gate.Lease, log *slog.Logger) (res Result, err error) {
	defer recovered(ctx, log, "step work", func(perr error) { res, err = Result{}, perr })
	return k.Do(ctx, w, out, lease)
}

// PanicError is what a panic inside an attempt became: the step fails with it. A panic in a
// goroutine nobody recovers ends the whole worker process — every step it was running with
// it — so every goroutine the lifecycle starts, and the handler itself, recover into one.
type PanicError struct {
	Where string // "step work", "preparation", "cancel watch", "attempt"
	Value any
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("internal error in Horizon's worker (see its log): %s panicked: %v", e.Where, e.Value)
}

// recovered is deferred by every function the lifecycle runs that could panic on a bug of
// ours: it recovers a panic, logs it with its stack, and hands fail the *PanicError.
func recovered(ctx context.Context, log *slog.Logger, where string, fail func(error)) {
	p := recover()
	if p == nil {
		return
	}
	log.ErrorContext(ctx, "attempt panicked", "where", where, "panic", p, "stack", string(debug.Stack()))
	fail(&PanicError{Where: where, Value: p})
}

// finish records the attempt's end — and what the work produced — in one transaction fenced
// by the attempt, then announces it; the run is advanced by advance. A superseded attempt's
// end is discarded.
func (l *Lifecycle) finish(ctx context.Context, a *Loaded, end ending) error {
	err := store.WithTx(ctx, l.DB, func(ctx context.Context, tx pgx.Tx) error {
		var errText, reason *string
		if end.line != "" {
			errText = &end.line
		}
		if end.result.Reason != "" {
			reason = &end.result.Reason
		}
		owned, err := store.StepFinish(ctx, tx, a.Step.ID, a.Step.Attempt, end.state, errText, reason)
		if err != nil || !owned || end.result.Record == nil {
			return err
		}
		return end.result.Record(ctx, tx)
	})
	if err != nil {
		return err
	}
	a.ended = true
	l.announcer().Publish(ctx, event(a, end.state, end.line))
	return nil
}

// advance moves the run on once this delivery recorded the attempt's end (Lifecycle.Advance),
// or hands that to run:advance when it cannot, or could not deliver the steps it queued (Redis
// down): run:advance, enqueued now or by the reconciler once Redis is back, delivers them again
// at the same attempt (runs.ErrNotDelivered).
func (l *Lifecycle) advance(ctx context.Context, a *Loaded, log *slog.Logger) {
	if !a.ended {
		return
	}
	err := l.Advance(ctx, a.Run.ID)
	if err == nil {
		return
	}
	log.WarnContext(ctx, "advance the run; handing it to run:advance", "error", err)
	if err := l.Enqueue.Enqueue(context.WithoutCancel(ctx), queue.NewRunAdvance(l.Queues, a.Run.ID)); err != nil {
		log.WarnContext(ctx, "enqueue run advance; the reconciler will do it", "error", err)
	}
}

// UnderLease runs fn with a context that also ends when the node's gate lease is lost; its
// error then says so (gate.ErrLost), so that the attempt is handed back rather than failed.
// A nil lease guards nothing.
func UnderLease(ctx context.Context, lease *gate.Lease, fn func(context.Context) error) error {
	guarded, stop := lease.Guard(ctx)
	defer stop()
	err := fn(guarded)
	if cause := context.Cause(guarded); err != nil && errors.Is(cause, gate.ErrLost) && !errors.Is(err, gate.ErrLost) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// event is a step's new state, as followers see it (the error line masked).
func event(a *Loaded, state horizon.StepState, errLine string) events.Event {
	return events.Event{Type: events.Step, ID: a.Step.ID, StackID: a.StackID, TeamID: a.TeamID, ISOID: a.ISOID,
		RunID: a.Run.ID, State: string(state), Job: a.Step.Job, Execution: a.Step.ExecutionIndex,
		Error: events.MaskError(a.Masker, errLine)}
}

// owner is the stack or ISO whose log the step writes to.
func (a *Loaded) owner() uuid.UUID {
	if a.ISOID != uuid.Nil {
		return a.ISOID
	}
	return a.StackID
}

// announcer is the after-commit path of an attempt's changes.
func (l *Lifecycle) announcer() announce.Announcer {
	return announce.Announcer{Events: l.Events, Redis: l.Redis, Enqueue: l.Enqueue, Queues: l.Queues, Namespace: l.Namespace, Log: l.Log}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
