package isotemplate

import (
	"fmt"
	"slices"
	"strings"

	"horizon/shared/horizon"
)

// Stage is one stage of an ISO build. The names are API (stages.only / stages.skip, the log's
// job field).
type Stage string

// The stages, in the order they run.
const (
	StagePreflight   Stage = "preflight"
	StageImage       Stage = "image"
	StageVMCreate    Stage = "vm-create"
	StageVMConfigure Stage = "vm-configure"
	StageTemplate    Stage = "template"
	StageClones      Stage = "clones"
)

// AllStages lists every stage in order.
var AllStages = []Stage{StagePreflight, StageImage, StageVMCreate, StageVMConfigure, StageTemplate, StageClones}

// StepKind is the step kind of a stage's steps.
func (s Stage) StepKind() horizon.StepKind {
	return map[Stage]horizon.StepKind{
		StagePreflight: horizon.StepISOPreflight, StageImage: horizon.StepISOImage, StageVMCreate: horizon.StepISOVMCreate,
		StageVMConfigure: horizon.StepISOVMConfigure, StageTemplate: horizon.StepISOTemplate, StageClones: horizon.StepISOClone,
	}[s]
}

// Phase is the stage's phase number in a run (its position in AllStages).
func (s Stage) Phase() int { return slices.Index(AllStages, s) }

// Stages returns the stages a spec of kind has: preflight and image for kind iso; for kind
// cloud-image also vm-create and vm-configure, template when it makes one, clones when it
// lists some.
func (s *Spec) Stages(kind horizon.ISOKind) []Stage {
	if kind == horizon.ISOKindISO {
		return []Stage{StagePreflight, StageImage}
	}
	out := []Stage{StagePreflight, StageImage, StageVMCreate, StageVMConfigure}
	if s.MakesTemplate() {
		out = append(out, StageTemplate)
	}
	if len(s.Clones) > 0 {
		out = append(out, StageClones)
	}
	return out
}

// Selection narrows a run to some stages, like the seed's --tags and --skip-tags.
type Selection struct {
	Only []string `json:"only,omitempty"`
	Skip []string `json:"skip,omitempty"`
}

// Check records a problem for every name that is not one of the stages given (the spec's), or
// a selection that leaves nothing but preflight to run.
func (sel Selection) Check(p *horizon.Problems, field string, stages []Stage) {
	names := make([]string, len(stages))
	for i, s := range stages {
		names[i] = string(s)
	}
	for _, list := range []struct {
		key   string
		names []string
	}{{"only", sel.Only}, {"skip", sel.Skip}} {
		for i, n := range list.names {
			if !slices.Contains(names, n) {
				p.Add(fmt.Sprintf("%s.%s[%d]", field, list.key, i), "must be one of this build's stages: %s", strings.Join(names, ", "))
			}
		}
	}
	if !p.Empty() {
		return
	}
	for _, s := range stages {
		if ok, _ := sel.Selected(s); ok && s != StagePreflight {
			return
		}
	}
	p.Add(field, "selects no stage to run")
}

// Selected reports whether stage runs under the selection, and why not when it does not.
func (sel Selection) Selected(stage Stage) (bool, string) {
	if slices.Contains(sel.Skip, string(stage)) {
		return false, "skipped: stages.skip lists " + string(stage)
	}
	if stage == StagePreflight {
		return true, "" // like the seed's "always" tag
	}
	if len(sel.Only) > 0 && !slices.Contains(sel.Only, string(stage)) {
		return false, "skipped: not in stages.only (" + strings.Join(sel.Only, ", ") + ")"
	}
	return true, ""
}

// Steps plans the steps of a build run of spec: one per stage in order (one per clone for the
// clones stage), each on its own phase so that a failure holds the later stages, clones in
// one phase so that one failing does not stop the others. Stages the selection leaves out are
// planned as skipped with the reason. Stages that touch the node (VM, template, clones) carry
// the server and node, which puts them through the node's build gate.
func Steps(spec *Spec, kind horizon.ISOKind, sel Selection, iso horizon.ISO) []horizon.Step {
	var out []horizon.Step
	for _, stage := range spec.Stages(kind) {
		ok, why := sel.Selected(stage)
		step := horizon.Step{Phase: stage.Phase(), PhaseName: string(stage), Job: string(stage), Kind: stage.StepKind()}
		if !ok {
			step.State, step.Reason = horizon.StepSkipped, &why
		}
		if Gated(stage) {
			step.ServerID, step.Node = &iso.ServerID, &iso.Node
		}
		if stage != StageClones {
			out = append(out, step)
			continue
		}
		for i := range spec.Clones {
			c := step
			c.ExecutionIndex = &i
			out = append(out, c)
		}
	}
	return out
}

// Gated reports whether a stage builds on the node and so takes its build gate: the VM's
// creation and configuration (which uploads cloud-init over SFTP), the template conversion and
// the clones. Preflight only asks questions; the image is a Proxmox download task that may run
// for minutes without touching the node's SSH, and holding the node for it would stall its
// machine builds.
func Gated(s Stage) bool {
	return s == StageVMCreate || s == StageVMConfigure || s == StageTemplate || s == StageClones
}
