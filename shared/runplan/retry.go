package runplan

import (
	"fmt"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// RetryFailed selects what a retry of the run last (with its steps) runs again: every
// execution but those whose step succeeded (or was skipped) in it and that are applied. What
// failed, was canceled, held back or never started runs again; what succeeded is not touched,
// and says in which run it succeeded.
func RetryFailed(last uuid.UUID, steps []horizon.Step) Select {
	done := map[uuid.UUID]bool{}
	for _, s := range steps {
		if s.ExecutionID != nil && (s.State == horizon.StepSucceeded || s.State == horizon.StepSkipped) {
			done[*s.ExecutionID] = true
		}
	}
	return func(e horizon.Execution) (bool, string) {
		if done[e.ID] && e.AppliedHash != nil {
			return false, fmt.Sprintf("succeeded in run %s", last)
		}
		return true, ""
	}
}
