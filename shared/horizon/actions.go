package horizon

// Actions a client may offer on a stack; the names are API.
const (
	ActionEdit            = "edit"
	ActionDeploy          = "deploy"
	ActionCancel          = "cancel"
	ActionRetryFailed     = "retry_failed"
	ActionForceRetry      = "force_retry"
	ActionRetryAll        = "retry_all"
	ActionRunAgain        = "run_again"
	ActionRemove          = "remove"
	ActionForceRemove     = "force_remove"
	ActionUpgradeTemplate = "upgrade_template"
	ActionDuplicate       = "duplicate"
	// ActionRunAction: the template's actions (GET /v1/stacks/{id}/actions) may be run.
	ActionRunAction = "run_action"
)

// Role capabilities that actions depend on.
type Capabilities struct {
	Write bool // members and admins
	Admin bool
}

// StackActions is the one place that says what can be done to a stack, so that bots and the
// frontend never guess. A stack with a run in progress can only be canceled; a stack whose
// removal failed can only finish it or be force-removed.
func StackActions(s Stack, runInProgress bool, can Capabilities) []string {
	if !can.Write {
		return []string{}
	}
	state := s.State
	if runInProgress || state.Busy() {
		return []string{ActionCancel}
	}
	var out []string
	if s.RemovalFailed() {
		out = []string{ActionRetryFailed, ActionRemove}
		if can.Admin {
			out = append(out, ActionForceRemove)
		}
		return out
	}
	switch state {
	case StackDraft:
		out = []string{ActionEdit, ActionDeploy, ActionRemove, ActionDuplicate}
	case StackDeployed:
		out = []string{ActionEdit, ActionRetryAll, ActionRunAgain, ActionRunAction, ActionRemove, ActionDuplicate}
		if can.Admin {
			out = append(out, ActionUpgradeTemplate)
		}
	case StackFailed:
		out = []string{ActionEdit, ActionRetryFailed, ActionForceRetry, ActionRetryAll, ActionRunAgain}
		if s.DeployedAt != nil {
			// A failed stack that was deployed once has machines its actions may run on.
			out = append(out, ActionRunAction)
		}
		out = append(out, ActionRemove, ActionDuplicate)
		if can.Admin {
			out = append(out, ActionForceRemove, ActionUpgradeTemplate)
		}
	default:
		out = []string{}
	}
	return out
}

// StepActions is what can be done to one step (pipeline card): run it again once its stack is
// at rest and the step has a result to refresh.
func StepActions(stackState StackState, runInProgress bool, step Step, can Capabilities) []string {
	if !can.Write || runInProgress || stackState.Busy() || step.Kind != StepApply || step.ExecutionID == nil {
		return []string{}
	}
	if stackState == StackDeployed || stackState == StackFailed {
		return []string{ActionRunAgain}
	}
	return []string{}
}

// RunActions is what can be done to a run: cancel it while it is in progress.
func RunActions(state RunState, can Capabilities) []string {
	if can.Write && (state == RunQueued || state == RunRunning) {
		return []string{ActionCancel}
	}
	return []string{}
}
