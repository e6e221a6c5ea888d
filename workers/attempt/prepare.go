package attempt

import (
	"context"
	"log/slog"
	"time"
)

// prepareAfter is how long the claim of the node's gate may take before the kind's Prepare
// starts beside it. A claim that is over sooner got the gate at once (Prepare then runs under
// it, inside Do's turn) or found it busy behind others (the attempt is handed back, and nothing
// was prepared in vain); one that takes longer is the first in line, waiting for the build
// before it to end: the time Prepare uses.
const prepareAfter = 20 * time.Millisecond

// preparation is a Prepare running beside the claim. A nil preparation is one that never
// started (the kind has nothing to prepare, or the step takes no gate).
type preparation struct {
	cancel context.CancelFunc
	start  chan struct{} // closed when Prepare starts, or will not
	done   chan struct{} // closed when Prepare returned, or did not start
	undo   func()
	err    error
}

// prepare starts the kind's Prepare, if it has one and the step waits for a gate, once the
// claim has taken prepareAfter.
func prepare[W Work](ctx context.Context, k Kind[W], w W, out *Log, log *slog.Logger) *preparation {
	p, ok := any(k).(Preparer[W])
	if !ok || !w.loaded().Step.TakesGate() {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	prep := &preparation{cancel: cancel, start: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(prep.done)
		timer := time.NewTimer(prepareAfter)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-prep.start: // the claim ended first: Do prepares, under the gate
			return
		case <-ctx.Done():
			return
		}
		// This goroutine is outside Do's recovery: a panic here (a bug of ours, or of a library
		// the kind calls) would end the worker process. It fails the step instead.
		defer recovered(ctx, log, "preparation", func(perr error) { prep.undo, prep.err = nil, perr })
		prep.undo, prep.err = p.Prepare(ctx, w, out)
	}()
	return prep
}

// wait is called once the attempt owns the step: it stops a Prepare that has not started (Do
// then prepares itself), waits for one that has, and returns its error.
func (p *preparation) wait() error {
	if p == nil {
		return nil
	}
	p.stopStart()
	<-p.done
	p.cancel()
	return p.err
}

// abandon is called when the attempt will not run: it cancels Prepare, waits for it, undoes
// what it made and drops its log lines.
func (p *preparation) abandon() {
	if p == nil {
		return
	}
	p.stopStart()
	p.cancel()
	<-p.done
	if p.undo != nil && p.err == nil {
		p.undo()
	}
}

func (p *preparation) stopStart() {
	select {
	case <-p.start:
	default:
		close(p.start)
	}
}
