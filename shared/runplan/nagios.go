package runplan

import (
	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// NagiosPhaseName names the phase of a run's Nagios step.
const NagiosPhaseName = "monitoring"

// Publish appends to an apply run's steps the step that publishes the stack to the Nagios
// server: alone in a last phase, so that it runs only once every machine succeeded.
func Publish(steps []horizon.Step, nagiosServer uuid.UUID) []horizon.Step {
	last := -1
	for _, s := range steps {
		last = max(last, s.Phase)
	}
	return append(steps, nagiosStep(last+1, horizon.StepNagiosPublish, nagiosServer))
}

// Moved adds, to a run that ends with Publish, the step that removes the stack from the Nagios
// server it was published to before the environment changed servers: in the same last phase,
// under that server's own gate.
func Moved(steps []horizon.Step, previous uuid.UUID) []horizon.Step {
	last := 0
	for _, s := range steps {
		last = max(last, s.Phase)
	}
	return append(steps, nagiosStep(last, horizon.StepNagiosUnpublish, previous))
}

// Unpublish puts before a removal's steps the step that removes the stack from the Nagios server:
// its first phase, before anything is destroyed.
func Unpublish(steps []horizon.Step, nagiosServer uuid.UUID) []horizon.Step {
	out := []horizon.Step{nagiosStep(0, horizon.StepNagiosUnpublish, nagiosServer)}
	for _, s := range steps {
		s.Phase++
		out = append(out, s)
	}
	return out
}

func nagiosStep(phase int, kind horizon.StepKind, server uuid.UUID) horizon.Step {
	node := horizon.NagiosGateNode
	return horizon.Step{Phase: phase, PhaseName: NagiosPhaseName, Kind: kind, State: horizon.StepPending, ServerID: &server, Node: &node}
}
