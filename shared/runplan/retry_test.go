package runplan

import (
	"testing"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

func TestRetryFailedRerunsAllButWhatSucceededAndIsApplied(t *testing.T) {
	last := uuid.New()
	applied := "hash"
	exec := func(applied *string) horizon.Execution {
		return horizon.Execution{ID: uuid.New(), AppliedHash: applied}
	}
	succeeded, skipped, failed, canceled, held, neverApplied, noStep :=
		exec(&applied), exec(&applied), exec(&applied), exec(&applied), exec(&applied), exec(nil), exec(&applied)
	step := func(e horizon.Execution, s horizon.StepState) horizon.Step {
		return horizon.Step{ExecutionID: &e.ID, State: s}
	}
	sel := RetryFailed(last, []horizon.Step{
		step(succeeded, horizon.StepSucceeded), step(skipped, horizon.StepSkipped), step(failed, horizon.StepFailed),
		step(canceled, horizon.StepCanceled), step(held, horizon.StepHeld), step(neverApplied, horizon.StepSucceeded),
		{Job: "a step of no execution", State: horizon.StepSucceeded},
	})
	for _, tc := range []struct {
		name string
		e    horizon.Execution
		want bool
	}{
		{"succeeded", succeeded, false}, {"skipped", skipped, false}, {"failed", failed, true}, {"canceled", canceled, true},
		{"held", held, true}, {"succeeded but not applied", neverApplied, true}, {"not in the run", noStep, true},
	} {
		got, reason := sel(tc.e)
		if got != tc.want {
			t.Errorf("%s: selected %v, want %v", tc.name, got, tc.want)
		}
		if !got && reason != "succeeded in run "+last.String() {
			t.Errorf("%s: reason %q, want the run it succeeded in", tc.name, reason)
		}
	}
}
