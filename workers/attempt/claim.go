package attempt

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/queue"
	"horizon/shared/store"
)

// claim starts an attempt of a step: it takes
// the step's node gate when the step builds on a node (Step.TakesGate), then marks the attempt
// started with the lease's fencing token. It returns the lease (nil for a step without a gate)
// and whether this attempt owns the step; when it does not (superseded), nothing was started.
//
// A step that left the node's line while it waited (gate.ErrLeft) is not owned. A busy gate is
// returned as is (gate.IsBusy): waiting is not a failure, and Asynq's IsFailure
// must not count it. The step is heartbeaten first, so a waiting step never looks hung.
//
// The caller must call release once its work has returned — after Terraform has exited — even
// when owned is false; release is a no-op without a lease.
//
// The wait for the gate, counted from the step's readiness like the pipeline's gate_wait_ms,
// goes to the lifecycle's Metrics (for /metrics) when the gate is taken.
func (l *Lifecycle) claim(ctx context.Context, s horizon.Step, log *slog.Logger) (lease *gate.Lease, release func(), owned bool, err error) {
	release = func() {}
	if s.TakesGate() {
		node := queue.GateNode(*s.ServerID, *s.Node)
		lease, err = l.Gate.Acquire(ctx, node, queue.StepTaskID(s.ID, s.Attempt), l.GateWait)
		if errors.Is(err, gate.ErrLeft) {
			// The step left the line while it waited (its run was canceled): it will not
			// build, and whoever made it leave ends it.
			return nil, release, false, nil
		}
		if gate.IsBusy(err) {
			if !l.waiting(ctx, node, s.ID, s.Attempt) {
				return nil, release, false, nil
			}
			return nil, release, false, err
		}
		if err != nil {
			return nil, release, false, err
		}
		release = func() {
			// A release whose context is gone still has to happen: use a fresh one.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, err := lease.Release(rctx); err != nil && !errors.Is(err, gate.ErrNotHolder) {
				log.WarnContext(rctx, "release node gate", "error", err)
			}
		}
	}
	var fence *int64
	if lease != nil {
		f := lease.Fence()
		fence = &f
		if s.ReadyAt != nil {
			if err := l.Metrics.GateWait(ctx, queue.GateNode(*s.ServerID, *s.Node), time.Since(*s.ReadyAt)); err != nil {
				log.WarnContext(ctx, "record gate wait", "error", err)
			}
		}
	}
	owned, err = store.StepStart(ctx, l.DB, s.ID, s.Attempt, fence)
	if err != nil || !owned {
		release()
		return nil, func() {}, owned, err
	}
	return lease, release, true, nil
}

// waiting heartbeats an attempt that is behind others at its node's gate, so that it never
// looks hung while it waits, and reports whether it still owns its step. One that does not
// (superseded, canceled while it waited) leaves the line at once, rather than stand in it until
// it goes stale. A failure to heartbeat is only logged: the step asks again soon.
//
// A waiter asks every few seconds (gate.BusyRetryDelay), while the reconciler presumes an
// attempt dead only after six heartbeat intervals without one: one heartbeat per interval is
// enough, and at scale the others were one of the engine's most frequent writes. Redis, which
// the ask has just reached, says whether one is due (a key that lives one interval); when it
// does not answer, the heartbeat is written. A superseded waiter is then found out at its first
// heartbeat of an interval, still behind others (or at once when it is next: it reads its step).
func (l *Lifecycle) waiting(ctx context.Context, node string, step uuid.UUID, attempt int) (owned bool) {
	owner := queue.StepTaskID(step, attempt)
	if due, err := l.Redis.SetNX(ctx, queue.WaiterBeatKey(l.Namespace, owner), "", l.Heartbeat).Result(); err == nil && !due {
		return true
	}
	owned, err := store.StepHeartbeat(ctx, l.DB, step, attempt)
	if err != nil {
		l.Log.WarnContext(ctx, "heartbeat while waiting for the node", "step_id", step, "error", err)
		return true
	}
	if !owned {
		if err := l.Gate.Leave(ctx, node, owner); err != nil {
			l.Log.WarnContext(ctx, "leave gate line", "step_id", step, "error", err)
		}
	}
	return owned
}

// leaveLine takes a step that will not build after all (canceled or skipped before it
// started) out of its node's line, where run:advance put it, so that the steps behind it need
// not wait for it to go stale.
func leaveLine(ctx context.Context, g *gate.Gate, s horizon.Step, log *slog.Logger) {
	if !s.TakesGate() {
		return
	}
	if err := g.Leave(ctx, queue.GateNode(*s.ServerID, *s.Node), queue.StepTaskID(s.ID, s.Attempt)); err != nil {
		log.WarnContext(ctx, "leave gate line", "step_id", s.ID, "error", err)
	}
}
