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
