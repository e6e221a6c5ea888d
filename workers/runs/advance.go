// Package runs holds the run's advance: the one place a run moves forward, run by the
// run:advance task and, in process, by the attempt that finished a step. It is idempotent and
// serialised on the run's row lock, so any number of duplicate deliveries, reconciler passes and
// step completions may call it at once.
package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/events"
	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/queue"
	"horizon/shared/store"
)

// Advancer handles run:advance.
type Advancer struct {
	DB      *pgxpool.Pool
	Queues  queue.Queues
	Enqueue queue.Enqueuer
	Gate    *gate.Gate
	// Events announces the changes an advance makes; Logs ends a finished run's log stream.
	Events *events.Publisher
	Logs   *logstream.Client
	Log    *slog.Logger
}

// ProcessTask implements asynq.Handler.
func (a Advancer) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p queue.RunAdvance
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("decode %s: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	err := a.advance(ctx, p.RunID, true)
	if errors.Is(err, horizon.ErrNotFound) {
		// Runs are never deleted: a run that is not there will not appear by retrying.
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	return err
}

// ErrNotDelivered wraps the error of an advance that committed but could not hand every step
// it queued to Redis: those steps stay queued until a run:advance delivers them again.
var ErrNotDelivered = errors.New("queued steps not delivered")

// Advance moves run forward (see horizon.Advance) and enqueues the steps it queued. It is
// the in-process advance of an attempt that ended a step; run:advance is the same with redeliver.
func (a Advancer) Advance(ctx context.Context, runID uuid.UUID) error {
	return a.advance(ctx, runID, false)
}

// advance moves run forward. With redeliver (run:advance: the reconciler's, or an advance
// handed on because it could not deliver) it also enqueues again the steps that were queued
// before it and have not started: an advance that committed them and then found Redis down, or
// a Redis that lost their tasks in a failover, left them queued with no task. Asynq drops the
// enqueue of a task that still exists (its id names the step's attempt), so a step is never
// delivered twice by this; one whose task was lost is delivered again at the same attempt
// within a reconciler pass, rather than given a new attempt once it went stale.
func (a Advancer) advance(ctx context.Context, runID uuid.UUID, redeliver bool) error {
	log := a.Log.With("run_id", runID)
	var notices []events.Event
	var ended *horizon.Run
	var removed, repair bool
	var canceled, queued []horizon.Step
	err := store.WithTx(ctx, a.DB, func(ctx context.Context, tx pgx.Tx) error {
		notices, ended, removed, repair, canceled, queued = nil, nil, false, false, nil, nil
		team, err := store.RunOwnerLock(ctx, tx, runID)
		if err != nil {
			return err
		}
		run, err := store.RunGetForUpdate(ctx, tx, runID)
		if err != nil {
			return err
		}
		if run.State.Terminal() {
			// A duplicate delivery after the run ended; or the reconciler's, for a run whose
			// log was never ended: the log is ended again below.
			if unended, err := logUnended(ctx, tx, run); err != nil || !unended {
				return err
			}
			ended, repair = &run, true
			removed = run.Kind == horizon.RunRemove && run.State == horizon.RunSucceeded
			log.WarnContext(ctx, "the run ended without the end of its log; ending it now")
			return nil
		}
		notify := func(kind events.Kind, id uuid.UUID, state string, s *horizon.Step) {
			e := events.Event{Type: kind, ID: id, TeamID: team, RunID: run.ID, State: state}
			if run.StackID != nil {
				e.StackID = *run.StackID
			}
			if run.ISOID != nil {
				e.ISOID = *run.ISOID
			}
			if s != nil {
				e.Job, e.Execution = s.Job, s.ExecutionIndex
			}
			notices = append(notices, e)
		}
		steps, err := store.StepsOfRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if run.State == horizon.RunQueued {
			if run, err = store.RunSetState(ctx, tx, runID, horizon.RunRunning, nil); err != nil {
				return err
			}
			notify(events.Run, run.ID, string(run.State), nil)
		}
		move := horizon.Advance(run.State, steps)
		if redeliver {
			for i, s := range steps {
				if s.State == horizon.StepQueued && !slices.Contains(move.Cancel, i) {
					queued = append(queued, s)
				}
			}
		}
		for _, i := range move.Hold {
			if err := store.StepSetState(ctx, tx, steps[i].ID, horizon.StepHeld); err != nil {
				return err
			}
			notify(events.Step, steps[i].ID, string(horizon.StepHeld), &steps[i])
		}
		for _, i := range move.Cancel {
			if err := store.StepSetState(ctx, tx, steps[i].ID, horizon.StepCanceled); err != nil {
				return err
			}
			notify(events.Step, steps[i].ID, string(horizon.StepCanceled), &steps[i])
			canceled = append(canceled, steps[i])
		}
		for _, i := range move.Queue {
			s, err := store.StepQueue(ctx, tx, steps[i].ID)
			if err != nil {
				return err
			}
			queued = append(queued, s)
			notify(events.Step, s.ID, string(s.State), &s)
		}
		if move.Done && run.ISOID != nil {
			isoState, err := finishISO(ctx, tx, run, move.Final, steps)
			if err != nil {
				return err
			}
			run.State = move.Final
			ended = &run
			notify(events.Run, run.ID, string(move.Final), nil)
			notify(events.ISO, *run.ISOID, string(isoState), nil)
			log.InfoContext(ctx, "run finished", "state", move.Final, "iso_id", *run.ISOID)
		} else if move.Done {
			stackState, err := finish(ctx, tx, run, move.Final, steps)
			if err != nil {
				return err
			}
			run.State = move.Final
			ended, removed = &run, stackState == horizon.StackRemoved
			notify(events.Run, run.ID, string(move.Final), nil)
			if run.StackID != nil {
				notify(events.Stack, *run.StackID, string(stackState), nil)
			}
			log.InfoContext(ctx, "run finished", "state", move.Final)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range notices {
		if _, err := a.Events.Publish(ctx, e); err != nil {
			log.WarnContext(ctx, "publish event", "error", err)
		}
	}
	if ended != nil && ended.StackID != nil {
		a.endLog(ctx, log, *ended, removed)
	}
	if ended != nil && ended.ISOID != nil {
		a.endISOLog(ctx, log, *ended, repair)
	}
	// A queued step canceled before it ran leaves its node's line, which would otherwise wait
	// for it to go stale.
	for _, s := range canceled {
		if s.TakesGate() {
			if err := a.Gate.Leave(ctx, queue.GateNode(*s.ServerID, *s.Node), queue.StepTaskID(s.ID, s.Attempt)); err != nil {
				log.WarnContext(ctx, "leave gate line", "step_id", s.ID, "error", err)
			}
		}
	}
	// After the commit: a lost enqueue leaves the step queued, and the next run:advance
	// delivers it again (advance).
	var lost error
	for _, s := range queued {
		taskID := queue.StepTaskID(s.ID, s.Attempt)
		if s.TakesGate() {
			// Register the waiter now, so the node builds in the order steps became ready; a step
			// whose work cannot turn out unneeded reads nothing until it is next (gate.Enqueue).
			if err := a.Gate.Enqueue(ctx, queue.GateNode(*s.ServerID, *s.Node), taskID, deref(s.ReadyAt), !s.MayBeUnneeded()); err != nil {
				log.WarnContext(ctx, "register gate waiter", "step_id", s.ID, "error", err)
			}
		}
		if err := a.Enqueue.Enqueue(ctx, queue.NewStep(a.Queues, s)); err != nil {
			lost = fmt.Errorf("%w: step %s: %w", ErrNotDelivered, s.ID, err)
		}
	}
	return lost
}

// LogEndGrace is how long after a run finished its log may still lack its end before the run
// is taken for one whose advance died between its commit and the end of its log (a worker
// SIGKILLed, a store down): well above the time that end takes, so that a duplicate delivery
// right after the commit does not end the log twice (which would repeat an ISO run's summary;
// the stream's second eof and log_ends's second row are harmless).
const LogEndGrace = 30 * time.Second

// logUnended reports whether run, finished, has gone LogEndGrace without the end of its log.
func logUnended(ctx context.Context, tx pgx.Tx, run horizon.Run) (bool, error) {
	if run.FinishedAt == nil || time.Since(*run.FinishedAt) < LogEndGrace {
		return false, nil
	}
	_, err := store.LogEndGet(ctx, tx, run.ID)
	if errors.Is(err, horizon.ErrNotFound) {
		return true, nil
	}
	return false, err
}

// removedLogRetention is how long the stream of a removal that succeeded outlives it: long
// enough for its followers to read to its end. Everything else of the stack's logs goes.
const removedLogRetention = time.Minute

// endLog ends a finished run's log stream, after storing the lines a dead writer streamed
// and never stored; once a removal succeeded, the streams of the stack's other runs are
// deleted (its stored lines went with the removal's commit).
func (a Advancer) endLog(ctx context.Context, log *slog.Logger, run horizon.Run, removed bool) {
	retention := time.Duration(0)
	if removed {
		retention = removedLogRetention
	} else if _, err := a.Logs.StoreStreamed(ctx, run.ID, *run.StackID); err != nil {
		// Lines a dead worker streamed and never stored (a removal's are deleted anyway).
		log.WarnContext(ctx, "store the lines of the run's log stream that log_lines lacks", "error", err)
	}
	if err := a.Logs.End(ctx, run.ID, *run.StackID, string(run.State), retention); err != nil {
		log.WarnContext(ctx, "end the run's log stream", "error", err)
	}
	if !removed {
		return
	}
	runs, err := store.RunIDsOfStack(ctx, a.DB, *run.StackID)
	if err != nil {
		log.WarnContext(ctx, "list the removed stack's runs", "error", err)
		return
	}
	others := runs[:0]
	for _, id := range runs {
		if id != run.ID {
			others = append(others, id)
		}
	}
	if err := a.Logs.DeleteStreams(ctx, others); err != nil {
		log.WarnContext(ctx, "delete the removed stack's logs", "error", err)
	}
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Now()
	}
	return *t
}

// finish ends the run and moves its stack to the state the run's outcome gives, which it
// returns.
func finish(ctx context.Context, tx pgx.Tx, run horizon.Run, final horizon.RunState, steps []horizon.Step) (horizon.StackState, error) {
	firstErr := firstError(final, steps, func(s horizon.Step) string {
		if s.Kind.Nagios() {
			return string(s.Kind)
		}
		return fmt.Sprintf("%s[%d]", s.Job, derefInt(s.ExecutionIndex))
	})
	if _, err := store.RunSetState(ctx, tx, run.ID, final, firstErr); err != nil {
		return "", err
	}
	if run.StackID == nil {
		return "", nil
	}
	to := horizon.StackFailed
	switch {
	case final == horizon.RunSucceeded && run.Kind == horizon.RunRemove:
		to = horizon.StackRemoved
		if _, err := store.LogDeleteStack(ctx, tx, *run.StackID); err != nil {
			return "", err
		}
	case final == horizon.RunSucceeded && run.Kind == horizon.RunRunAgain, run.Kind == horizon.RunAction:
		// Running one job again fixes nothing else: the stack returns to where it was. An
		// action, whatever its outcome, changes nothing the stack's state says either: its
		// failure is the run's, kept in the history.
		before, err := store.StateBeforeRun(ctx, tx, run.ID)
		if err != nil {
			return "", err
		}
		to = before
	case final == horizon.RunSucceeded:
		to = horizon.StackDeployed
	}
	// Horizon makes this change, not the user who started the run: the entry names no actor
	// (the console shows "Horizon") and keeps the run, which names its starter.
	_, err := store.StackSetState(ctx, tx, horizon.StateChange{StackID: *run.StackID, RunID: &run.ID, To: to, Error: firstErr})
	return to, err
}

// firstError is the error a run ends with: the first failed step's first error line, named
// by label, or "run canceled".
func firstError(final horizon.RunState, steps []horizon.Step, label func(horizon.Step) string) *string {
	if final == horizon.RunCanceled {
		msg := "run canceled"
		return &msg
	}
	for _, s := range steps {
		if s.State == horizon.StepFailed && s.Error != nil {
			e := label(s) + ": " + *s.Error
			return &e
		}
	}
	return nil
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
