package horizon_test

import (
	"reflect"
	"testing"

	"horizon/shared/horizon"
)

func steps(spec ...any) []horizon.Step {
	var out []horizon.Step
	for i := 0; i < len(spec); i += 2 {
		out = append(out, horizon.Step{Phase: spec[i].(int), State: spec[i+1].(horizon.StepState)})
	}
	return out
}

func TestAdvance(t *testing.T) {
	t.Parallel()
	const (
		P  = horizon.StepPending
		Q  = horizon.StepQueued
		R  = horizon.StepRunning
		S  = horizon.StepSucceeded
		F  = horizon.StepFailed
		H  = horizon.StepHeld
		K  = horizon.StepSkipped
		Cn = horizon.StepCanceled
	)
	tests := []struct {
		name  string
		state horizon.RunState
		steps []horizon.Step
		want  horizon.Move
	}{
		{"first phase queues all its jobs at once", horizon.RunQueued, steps(0, P, 0, P, 1, P),
			horizon.Move{Queue: []int{0, 1}}},
		{"a phase in progress waits", horizon.RunRunning, steps(0, S, 0, R, 1, P), horizon.Move{}},
		{"next phase once the previous succeeded", horizon.RunRunning, steps(0, S, 0, K, 1, P, 2, P),
			horizon.Move{Queue: []int{2}}},
		{"a failure waits for its phase, then holds later phases", horizon.RunRunning, steps(0, F, 0, R, 1, P),
			horizon.Move{}},
		{"failed phase over: hold and fail", horizon.RunRunning, steps(0, F, 0, S, 1, P, 2, P),
			horizon.Move{Hold: []int{2, 3}, Done: true, Final: horizon.RunFailed}},
		{"all done", horizon.RunRunning, steps(0, S, 1, S, 1, K), horizon.Move{Done: true, Final: horizon.RunSucceeded}},
		{"no steps", horizon.RunQueued, nil, horizon.Move{Done: true, Final: horizon.RunSucceeded}},
		{"canceling with a step running", horizon.RunCanceling, steps(0, R, 0, Q, 1, P),
			horizon.Move{Cancel: []int{1, 2}}},
		{"canceling, nothing running", horizon.RunCanceling, steps(0, Cn, 0, S, 1, P),
			horizon.Move{Cancel: []int{2}, Done: true, Final: horizon.RunCanceled}},
		{"held steps count as over", horizon.RunRunning, steps(0, F, 1, H), horizon.Move{Done: true, Final: horizon.RunFailed}},
		{"phases out of order in the slice", horizon.RunRunning, steps(1, P, 0, S), horizon.Move{Queue: []int{0}}},
		{"a finished run stays finished", horizon.RunSucceeded, steps(0, P), horizon.Move{Done: true, Final: horizon.RunSucceeded}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := horizon.Advance(tc.state, tc.steps)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
