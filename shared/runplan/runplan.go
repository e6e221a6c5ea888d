// Package runplan turns an intent (deploy, retry, run again, remove) into the steps of a run:
// which executions it touches, in which phase, and which it leaves alone and why. It is pure —
// the API calls it inside the transaction that writes the run, and the plan endpoint calls it to
// show what saving would do.
//
// Phases of an apply run follow the template's phases; a remove run destroys in reverse phase
// order. Every active execution appears in the run, so the pipeline shows every card: those the
// run does not need to touch are written as skipped, with the reason.
package runplan

import (
	"sort"

	"horizon/shared/horizon"
	"horizon/shared/template"
)

// Select decides, for one execution, whether the run works on it; a false answer carries the
// reason shown on its skipped card.
type Select func(e horizon.Execution) (bool, string)

// All selects every execution.
func All(horizon.Execution) (bool, string) { return true, "" }

// Apply plans an apply run over the stack's active executions, phase by phase.
func Apply(def *template.Definition, execs []horizon.Execution, sel Select) []horizon.Step {
	return plan(def, execs, sel, horizon.StepApply, false)
}

// Destroy plans a destroy run: the selected executions, latest phase first.
func Destroy(def *template.Definition, execs []horizon.Execution, sel Select) []horizon.Step {
	return plan(def, execs, sel, horizon.StepDestroy, true)
}

func plan(def *template.Definition, execs []horizon.Execution, sel Select, kind horizon.StepKind, reverse bool) []horizon.Step {
	byJob := map[string][]horizon.Execution{}
	for _, e := range execs {
		if e.State == horizon.ExecutionRemoved {
			continue
		}
		byJob[e.Job] = append(byJob[e.Job], e)
	}
	phases := def.Phases
	order := make([]int, len(phases))
	for i := range order {
		order[i] = i
	}
	if reverse {
		sort.Sort(sort.Reverse(sort.IntSlice(order)))
	}
	var steps []horizon.Step
	for runPhase, pi := range order {
		p := phases[pi]
		for _, job := range p.Jobs {
			es := byJob[job.Name]
			sort.Slice(es, func(i, j int) bool { return es[i].Index < es[j].Index })
			for _, e := range es {
				steps = append(steps, step(runPhase, p.Name, job, e, sel, kind))
			}
		}
	}
	return steps
}

func step(phase int, phaseName string, job template.Job, e horizon.Execution, sel Select, kind horizon.StepKind) horizon.Step {
	id, idx := e.ID, e.Index
	s := horizon.Step{Phase: phase, PhaseName: phaseName, Job: job.Name, ExecutionID: &id, ExecutionIndex: &idx, Kind: kind, State: horizon.StepPending}
	if job.Machine {
		s.ServerID = e.Config.ProxmoxServerID
		if e.Config.Node != "" {
			node := e.Config.Node
			s.Node = &node
		}
	}
	if ok, reason := sel(e); !ok {
		s.State = horizon.StepSkipped
		s.Reason = &reason
	}
	return s
}

// UndoActions plans the undo of a stack's terraform action instances, given newest first: one
// phase each, so that they are destroyed one after the other, newest first (an instance may
// use what an older one made).
func UndoActions(instances []horizon.ActionInstance) []horizon.Step {
	steps := make([]horizon.Step, 0, len(instances))
	for i, in := range instances {
		id, n := in.ID, in.Number
		steps = append(steps, horizon.Step{Phase: i, PhaseName: "undo " + in.Action, Job: in.Action, ExecutionIndex: &n,
			Kind: horizon.StepActionDestroy, State: horizon.StepPending, ActionInstanceID: &id})
	}
	return steps
}

// Then returns first followed by then, then's phases moved after first's last: a run whose
// steps come from several plans (a removal: the actions' undo, then the destroys).
func Then(first, then []horizon.Step) []horizon.Step {
	next := 0
	for _, s := range first {
		next = max(next, s.Phase+1)
	}
	out := append([]horizon.Step{}, first...)
	for _, s := range then {
		s.Phase += next
		out = append(out, s)
	}
	return out
}
