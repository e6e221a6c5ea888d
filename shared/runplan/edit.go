package runplan

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/template"
)

// Actions of an edit, in the words of the plan.
const (
	ActionCreate    = "create"
	ActionDestroy   = "destroy"
	ActionReapply   = "reapply"
	ActionDependent = "dependent"
	// actionUnchanged marks, in a run's steps only, an execution the edit leaves alone.
	actionUnchanged = "unchanged"
)

// Reason says why an execution is touched.
type Reason struct {
	// Kind is "param", "attachment", "input", "commit", "template_upgrade",
	// "removed_from_template", "removed", "added" or "unfinished".
	Kind string `json:"kind"`
	// Param or attachment name and its values (secret values are never shown: Secret is true).
	Param  string `json:"param,omitempty"`
	From   any    `json:"from,omitempty"`
	To     any    `json:"to,omitempty"`
	Secret bool   `json:"secret,omitempty"`
	// Input is the dependent's input fed from FromJob.
	Input   string `json:"input,omitempty"`
	FromJob string `json:"from_job,omitempty"`
}

// Change is one execution an edit touches.
type Change struct {
	Action string
	Job    string
	Index  int
	// Execution is the existing execution; for a create, the one the caller inserted (or a
	// placeholder with no id while only planning).
	Execution horizon.Execution
	Because   []Reason
	// Cleanup are the scripts a destroy runs first.
	Cleanup []string
	// Phase and PhaseName place the change in the run.
	Phase     int
	PhaseName string
	// TemplateVersion is the version whose code a destroy of a removed job runs.
	TemplateVersion *int
}

// Desired is one execution an edit wants: an existing one (Existing, with its new answers in
// Config) or a new one (Existing nil).
type Desired struct {
	Existing *horizon.Execution
	Job      string
	Config   horizon.ExecutionConfig
	// SecretsChanged names the secret parameters whose value the edit changes.
	SecretsChanged []string
	// SecretParameters are the execution's sealed secret parameters after the edit.
	SecretParameters []byte
}

// EditInput is what planning an edit needs.
type EditInput struct {
	// Def is the definition the run applies; Old the stack's current one (the same object
	// unless the edit upgrades the template), OldVersion its number.
	Def, Old   *template.Definition
	OldVersion int
	// Current are the stack's active executions; Desired what the edit wants.
	Current []horizon.Execution
	Desired []Desired
	// NewHash is the effective-answers hash each existing desired execution would be applied
	// with; an execution whose hash equals its applied hash need not run.
	NewHash map[uuid.UUID]string
	// Unfinished are executions whose last run left them failed, held, canceled or pending: an
	// edit of a failed stack finishes them in the same run.
	Unfinished map[uuid.UUID]bool
	Upgrade    bool
}

// Edit plans an edit: which executions to create, destroy and re-apply and why, which
// dependents run again, in run order. It writes nothing.
func Edit(in EditInput) []Change {
	var changes []Change
	wanted := map[uuid.UUID]bool{}
	nextIndex := map[string]int{}
	for _, e := range in.Current {
		if e.Index >= nextIndex[e.Job] {
			nextIndex[e.Job] = e.Index + 1
		}
	}
	touched := map[string]bool{}
	for _, d := range in.Desired {
		job := in.Def.Job(d.Job)
		if d.Existing == nil {
			idx := nextIndex[d.Job]
			nextIndex[d.Job]++
			changes = append(changes, Change{Action: ActionCreate, Job: d.Job, Index: idx,
				Execution: horizon.Execution{Job: d.Job, Index: idx, Config: d.Config, SecretParameters: d.SecretParameters, State: horizon.ExecutionActive},
				Because:   []Reason{{Kind: "added"}}})
			touched[d.Job] = true
			continue
		}
		e := *d.Existing
		wanted[e.ID] = true
		because := diff(job, e.Config, d.Config, d.SecretsChanged)
		if in.Upgrade && len(because) == 0 && in.NewHash[e.ID] != deref(e.AppliedHash) {
			because = append(because, Reason{Kind: "template_upgrade"})
		}
		if len(because) == 0 && e.AppliedHash != nil && in.NewHash[e.ID] != *e.AppliedHash {
			because = append(because, Reason{Kind: "commit"})
		}
		if len(because) == 0 && (in.Unfinished[e.ID] || e.AppliedHash == nil) {
			because = append(because, Reason{Kind: "unfinished"})
		}
		if len(because) == 0 {
			continue
		}
		e.Config, e.SecretParameters = d.Config, d.SecretParameters
		changes = append(changes, Change{Action: ActionReapply, Job: e.Job, Index: e.Index, Execution: e, Because: because})
		touched[e.Job] = true
	}
	for _, e := range in.Current {
		if wanted[e.ID] {
			continue
		}
		c := Change{Action: ActionDestroy, Job: e.Job, Index: e.Index, Execution: e, Because: []Reason{{Kind: "removed"}}}
		oldJob := in.Old.Job(e.Job)
		if in.Def.Job(e.Job) == nil {
			c.Because = []Reason{{Kind: "removed_from_template"}}
			v := in.OldVersion
			c.TemplateVersion = &v
		}
		if oldJob != nil {
			for _, s := range oldJob.Cleanup {
				c.Cleanup = append(c.Cleanup, s.Name)
			}
		}
		changes = append(changes, c)
		touched[e.Job] = true
	}
	changes = append(changes, dependents(in, changes, touched)...)
	place(in.Def, changes)
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].Phase < changes[j].Phase })
	return changes
}

// dependents are the executions of jobs depending on what changes, not already changing; they
// run again only if their inputs turn out changed.
func dependents(in EditInput, changes []Change, touched map[string]bool) []Change {
	changing := map[uuid.UUID]bool{}
	for _, c := range changes {
		if c.Execution.ID != uuid.Nil {
			changing[c.Execution.ID] = true
		}
	}
	var jobs []string
	for j := range touched {
		jobs = append(jobs, j)
	}
	affected := map[string]bool{}
	for j := range touched {
		affected[j] = true
	}
	dependentJobs := in.Def.Dependents(jobs...)
	for _, j := range dependentJobs {
		affected[j] = true
	}
	var out []Change
	for _, job := range dependentJobs {
		var because []Reason
		j := in.Def.Job(job)
		names := make([]string, 0, len(j.Inputs))
		for name := range j.Inputs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if ref, err := template.ParseReference(j.Inputs[name]); err == nil && affected[ref.Job] {
				because = append(because, Reason{Kind: "input", Input: name, FromJob: ref.Job})
			}
		}
		for _, e := range in.Current {
			if e.Job == job && !changing[e.ID] {
				out = append(out, Change{Action: ActionDependent, Job: job, Index: e.Index, Execution: e, Because: because})
			}
		}
	}
	return out
}

// place gives each change its run phase. Jobs an upgrade removed are destroyed first (phase
// 0); then, per template phase p, the removals of remove-first jobs (3p+1), the builds and
// re-applies (3p+2), and the removals of add-first jobs (3p+3), whose new machines exist first.
func place(def *template.Definition, changes []Change) {
	phaseOf := map[string]int{}
	for i, p := range def.Phases {
		for _, j := range p.Jobs {
			phaseOf[j.Name] = i
		}
	}
	for i := range changes {
		c := &changes[i]
		p, known := phaseOf[c.Job]
		if !known {
			c.Phase, c.PhaseName = 0, "removed from the template"
			continue
		}
		name := def.Phases[p].Name
		switch {
		case c.Action != ActionDestroy:
			c.Phase, c.PhaseName = 3*p+2, name
		case def.Job(c.Job).Replace == template.ReplaceAddFirst:
			c.Phase, c.PhaseName = 3*p+3, name+" (remove after replacing)"
		default:
			c.Phase, c.PhaseName = 3*p+1, name+" (remove)"
		}
	}
}

// Steps turns changes (every one with its execution's id) into the steps of the run. The
// executions of current that no change touches are written as skipped ("unchanged"), so the
// run's pipeline shows every card, as other runs' do.
func Steps(def *template.Definition, changes []Change, current []horizon.Execution) []horizon.Step {
	touched := map[uuid.UUID]bool{}
	for _, c := range changes {
		touched[c.Execution.ID] = true
	}
	for _, e := range current {
		if !touched[e.ID] && e.State == horizon.ExecutionActive && def.Job(e.Job) != nil {
			changes = append(changes, Change{Action: actionUnchanged, Job: e.Job, Index: e.Index, Execution: e})
		}
	}
	place(def, changes)
	sort.SliceStable(changes, func(i, j int) bool {
		if changes[i].Phase != changes[j].Phase {
			return changes[i].Phase < changes[j].Phase
		}
		return changes[i].Job < changes[j].Job || changes[i].Job == changes[j].Job && changes[i].Index < changes[j].Index
	})
	steps := make([]horizon.Step, 0, len(changes))
	for _, c := range changes {
		id, idx := c.Execution.ID, c.Execution.Index
		kind := horizon.StepApply
		if c.Action == ActionDestroy {
			kind = horizon.StepDestroy
		}
		s := horizon.Step{Phase: c.Phase, PhaseName: c.PhaseName, Job: c.Job, ExecutionID: &id, ExecutionIndex: &idx, Kind: kind,
			State: horizon.StepPending, TemplateVersion: c.TemplateVersion, OnlyIfChanged: c.Action == ActionDependent}
		if c.Execution.Config.ProxmoxServerID != nil && c.Execution.Config.Node != "" {
			node := c.Execution.Config.Node
			s.ServerID, s.Node = c.Execution.Config.ProxmoxServerID, &node
		}
		reason := summary(c)
		if c.Action == actionUnchanged {
			s.State = horizon.StepSkipped
		}
		s.Reason = &reason
		steps = append(steps, s)
	}
	return steps
}

// summary is a change's reasons in one line, for the step's card.
func summary(c Change) string {
	s := c.Action
	for i, r := range c.Because {
		sep := ": "
		if i > 0 {
			sep = ", "
		}
		switch {
		case r.Param != "" && r.Secret:
			s += sep + r.Param + " changed"
		case r.Param != "":
			s += fmt.Sprintf("%s%s %v → %v", sep, r.Param, r.From, r.To)
		case r.Input != "":
			s += sep + "input " + r.Input + " from " + r.FromJob
		default:
			s += sep + r.Kind
		}
	}
	return s
}

// diff lists what differs between two configs of an execution of job.
func diff(job *template.Job, old, new horizon.ExecutionConfig, secrets []string) []Reason {
	var out []Reason
	if job != nil {
		for _, p := range job.Parameters {
			if p.Secret {
				continue
			}
			from, to := valueOr(old.Parameters[p.Name], p.Default), valueOr(new.Parameters[p.Name], p.Default)
			if !equal(from, to) {
				out = append(out, Reason{Kind: "param", Param: p.Name, From: from, To: to})
			}
		}
	}
	for _, name := range secrets {
		out = append(out, Reason{Kind: "param", Param: name, Secret: true})
	}
	attach := func(name string, from, to any) {
		if !equal(from, to) {
			out = append(out, Reason{Kind: "attachment", Param: name, From: from, To: to})
		}
	}
	attach("address_id", ptr(old.AddressID), ptr(new.AddressID))
	attach("ssh_key_id", ptr(old.SSHKeyID), ptr(new.SSHKeyID))
	attach("proxmox_server_id", ptr(old.ProxmoxServerID), ptr(new.ProxmoxServerID))
	attach("node", old.Node, new.Node)
	attach("pool", old.Pool, new.Pool)
	attach("iso_id", ptr(old.ISOID), ptr(new.ISOID))
	attach("node_exporter", old.NodeExporter, new.NodeExporter)
	attach("startup_order", ptrInt(old.StartupOrder), ptrInt(new.StartupOrder))
	attach("nagios_hostgroup", old.NagiosHostgroup, new.NagiosHostgroup)
	return out
}

func valueOr(v, def any) any {
	if v == nil {
		return def
	}
	return v
}

// equal compares JSON-decoded values, where integers may arrive as float64 or int.
func equal(a, b any) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return v
}

func ptr(id *uuid.UUID) any {
	if id == nil {
		return nil
	}
	return id.String()
}

func ptrInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
