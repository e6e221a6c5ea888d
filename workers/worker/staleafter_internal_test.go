package worker

import (
	"testing"
	"time"

	"horizon/shared/gate"
)

// TestAStepWaitingForABusyNodeNeverLooksStale: a step waiting for its node's gate heartbeats
// only when it asks (after gateWait in the handler); between two asks it is silent for the
// busy retry delay (at most gate.MaxBusyRetryDelay), the wait for Asynq to move it to pending
// and pick it up, and gateWait again. For every heartbeat the configuration allows (any
// positive duration, HORIZON_STEP_HEARTBEAT), the reconciler's threshold must exceed that
// silence, and leave a running step its six heartbeats. Were it shorter, the reconciler would
// give every waiter a new attempt, which joins the back of the node's line: on a busy node
// builds would lose their place over and over and never build. The gate's own test checks the
// other side (the retry delay stays below the gate's StaleAfter).
func TestAStepWaitingForABusyNodeNeverLooksStale(t *testing.T) {
	t.Parallel()
	silence := gateWait + gate.MaxBusyRetryDelay + DelayedTaskCheckInterval + TaskCheckInterval
	for _, h := range []time.Duration{time.Nanosecond, 100 * time.Millisecond, time.Second, 10 * time.Second /* the default */, time.Minute, time.Hour} {
		if s := staleAfter(h); s <= silence || s < 6*h {
			t.Errorf("staleAfter(%s) = %s: want above a waiting step's silence, %s, and at least six heartbeats, %s", h, s, silence, 6*h)
		}
	}
}
