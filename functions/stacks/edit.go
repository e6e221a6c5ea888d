package stacks

import (
	"context"
	"encoding/json"
	"errors"
	"sort"

	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/answers"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/quota"
	"horizon/shared/runplan"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/shared/template"
)

// edit is an edit of a deployed (or failed) stack, planned: what saving it would do.
type edit struct {
	l        *loaded
	def      *template.Definition // the definition the run applies
	version  int                  // its number
	commits  map[string]string    // the commits new executions (and, on upgrade, all) pin
	desired  []runplan.Desired
	secrets  map[int]map[string]string // desired index → secret parameters (opened)
	changes  []runplan.Change
	problems []horizon.FieldError
	cat      *catalogue
	name     string // the stack's name after the edit: what new machines are named after
}

// planEdit plans an edit of l by req (and, when upgradeTo is set, an upgrade to that template
// version). Structural mistakes are a *horizon.ValidationError; problems of the resulting
// answers are in problems.
func planEdit(ctx context.Context, q store.Querier, d api.Deps, who auth.Principal, l *loaded, req UpdateRequest, upgradeTo *int) (*edit, error) {
	ed := &edit{l: l, def: l.def, version: l.stack.TemplateVersion, commits: l.version.JobCommits, secrets: map[int]map[string]string{},
		name: stackName(l, req)}
	if upgradeTo != nil {
		tv, def, err := version(ctx, q, l.stack.TemplateID, *upgradeTo)
		if errors.Is(err, horizon.ErrNotFound) {
			return nil, horizon.Invalid("version", "is not a version of this stack's template")
		}
		if err != nil {
			return nil, err // the database's failure, not the caller's: never a 4xx
		}
		ed.def, ed.version, ed.commits = def, *upgradeTo, tv.JobCommits
	}
	var p horizon.Problems
	if err := ed.desire(req, d.Box, &p); err != nil {
		return nil, err
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	cat, err := loadCatalogue(ctx, q, l.stack.EnvironmentID, l.stack.TeamID, l.stack.ID)
	if err != nil {
		return nil, err
	}
	ed.cat = cat
	if err := ed.preselectAdded(ctx, q, who); err != nil {
		return nil, err
	}
	hashes := ed.hashes(d.Box)
	unfinished, err := unfinishedExecutions(ctx, q, l)
	if err != nil {
		return nil, err
	}
	ed.changes = runplan.Edit(runplan.EditInput{Def: ed.def, Old: l.def, OldVersion: l.stack.TemplateVersion, Current: l.execs,
		Desired: ed.desired, NewHash: hashes, Unfinished: unfinished, Upgrade: upgradeTo != nil})
	if ed.problems, err = problems(ctx, q, ed.def, ed.result(), cat); err != nil {
		return nil, err
	}
	ed.problems = append(ed.problems, quotaProblems(cat, editItems(ed))...)
	return ed, nil
}

// desire turns the request into the executions the edit wants. Without jobs, every execution
// stays with its answers (an upgrade re-pins them).
func (ed *edit) desire(req UpdateRequest, box *secrets.Box, p *horizon.Problems) error {
	byID := map[uuid.UUID]*horizon.Execution{}
	for i := range ed.l.execs {
		byID[ed.l.execs[i].ID] = &ed.l.execs[i]
	}
	if req.Jobs == nil {
		for i := range ed.l.execs {
			e := &ed.l.execs[i]
			if ed.def.Job(e.Job) != nil {
				ed.desired = append(ed.desired, runplan.Desired{Existing: e, Job: e.Job, Config: e.Config, SecretParameters: e.SecretParameters})
			}
		}
		return nil
	}
	for name := range req.Jobs {
		if ed.def.Job(name) == nil {
			p.Add("jobs."+name, "is not a job of this template version")
		}
	}
	req.Jobs = resolveRequests(req.Jobs, ed.l.execs, p)
	for _, job := range ed.def.Jobs() {
		reqs, given := req.Jobs[job.Name]
		if !given {
			for i := range ed.l.execs {
				if e := &ed.l.execs[i]; e.Job == job.Name {
					ed.desired = append(ed.desired, runplan.Desired{Existing: e, Job: e.Job, Config: e.Config, SecretParameters: e.SecretParameters})
				}
			}
			continue
		}
		lo, hi := job.Executions.Range()
		if n := len(reqs.Executions); n > hi || n < lo {
			p.Add("jobs."+job.Name+".executions", "has %d executions; the template allows %d to %d", n, lo, hi)
			continue
		}
		for i, r := range reqs.Executions {
			e, ok := executionFrom(job, i, r, box, p)
			if !ok {
				continue
			}
			want := runplan.Desired{Job: job.Name, Config: e.Config}
			values := openSecrets(box, e.SecretParameters)
			if r.ID != nil {
				old := byID[*r.ID]
				if old == nil || old.Job != job.Name {
					p.Add(execField(job.Name, i, "id"), "is not an execution of job %s of this stack", job.Name)
					continue
				}
				// Its VM id and Terraform state belong to its cluster: moving it to another
				// one is a replacement, which the user asks for explicitly.
				if was, now := old.Config.ProxmoxServerID, e.Config.ProxmoxServerID; was != nil && old.AppliedHash != nil && !sameID(was, now) {
					p.Add(execField(job.Name, i, "proxmox_server_id"), "cannot change on a built machine: remove this execution and add a new one")
					continue
				}
				prev := openSecrets(box, old.SecretParameters)
				for k, v := range values {
					if prev[k] != v {
						want.SecretsChanged = append(want.SecretsChanged, k)
					}
				}
				for k, v := range prev {
					if _, set := values[k]; !set {
						values[k] = v // a secret the edit leaves out keeps its value
					}
				}
				sort.Strings(want.SecretsChanged)
				want.Existing = old
			}
			e.Config.SecretParameterNames = nil
			setSecrets(&e, values, box)
			want.Config, want.SecretParameters = e.Config, e.SecretParameters
			ed.secrets[len(ed.desired)] = values
			ed.desired = append(ed.desired, want)
		}
	}
	return nil
}

// preselectAdded fills, for the executions the edit adds, the answers that admit a single
// option, as creating the stack does.
func (ed *edit) preselectAdded(ctx context.Context, q store.Querier, who auth.Principal) error {
	var added []horizon.Execution
	var at []int
	count := map[string]int{}
	for i, want := range ed.desired {
		if want.Existing == nil {
			added = append(added, horizon.Execution{Job: want.Job, Index: count[want.Job], Config: want.Config})
			at = append(at, i)
		}
		count[want.Job]++
	}
	if len(added) == 0 {
		return nil
	}
	if _, err := preselect(ctx, q, ed.def, added, ed.cat, who); err != nil {
		return err
	}
	for k, i := range at {
		ed.desired[i].Config = added[k].Config
	}
	return nil
}

// hashes computes, for each existing desired execution, the hash it would be applied with.
func (ed *edit) hashes(box *secrets.Box) map[uuid.UUID]string {
	outputs := func(job string) []map[string]any {
		var out []map[string]any
		for _, e := range ed.l.execs {
			if e.Job != job {
				continue
			}
			m := map[string]any{}
			for k, v := range e.Outputs {
				m[k] = v
			}
			for k, v := range openSecretsOf(box, horizon.PurposeSecretOutputs, e.SecretOutputs) {
				m[k] = v
			}
			out = append(out, m)
		}
		return out
	}
	hashes := map[uuid.UUID]string{}
	for i, want := range ed.desired {
		if want.Existing == nil {
			continue
		}
		job := ed.def.Job(want.Job)
		secretParams, ok := ed.secrets[i]
		if !ok {
			secretParams = openSecrets(box, want.Existing.SecretParameters)
		}
		ef, err := answers.Resolve(job, want.Config.Parameters, secretParams, outputs)
		if err != nil {
			continue // unresolvable inputs: no hash, so it is re-applied
		}
		hashes[want.Existing.ID] = ef.Hash(ed.commitOf(*want.Existing), answers.Attachments(want.Config))
	}
	return hashes
}

// commitOf is the commit an execution is applied at after the edit: the new version's on an
// upgrade, else its own.
func (ed *edit) commitOf(e horizon.Execution) string {
	if ed.version != ed.l.stack.TemplateVersion {
		return ed.commits[e.Job]
	}
	return e.Commit
}

// result are the executions the stack would have after the edit (for its problems).
func (ed *edit) result() []horizon.Execution {
	var out []horizon.Execution
	for _, c := range ed.changes {
		if c.Action != runplan.ActionDestroy {
			out = append(out, c.Execution)
		}
	}
	touched := map[uuid.UUID]bool{}
	for _, c := range ed.changes {
		touched[c.Execution.ID] = true
	}
	for _, e := range ed.l.execs {
		if !touched[e.ID] && ed.def.Job(e.Job) != nil {
			out = append(out, e)
		}
	}
	return out
}

// unfinishedExecutions are those whose step in the stack's last run did not succeed.
func unfinishedExecutions(ctx context.Context, q store.Querier, l *loaded) (map[uuid.UUID]bool, error) {
	out := map[uuid.UUID]bool{}
	if l.stack.State != horizon.StackFailed {
		return out, nil
	}
	last, err := store.RunLatestChange(ctx, q, l.stack.ID)
	if errors.Is(err, horizon.ErrNotFound) {
		return out, nil // failed without a run: nothing ran to leave unfinished
	}
	if err != nil {
		return nil, err
	}
	steps, err := store.StepsOfRun(ctx, q, last.ID)
	if err != nil {
		return nil, err
	}
	for _, s := range steps {
		if s.ExecutionID != nil && s.State != horizon.StepSucceeded && s.State != horizon.StepSkipped {
			out[*s.ExecutionID] = true
		}
	}
	return out, nil
}

func openSecrets(box *secrets.Box, sealed []byte) map[string]string {
	return openSecretsOf(box, horizon.PurposeSecretParameters, sealed)
}

// openSecretsOf opens a sealed JSON map; a value that does not open counts as empty (the
// worker, which must use it, fails loudly instead).
func openSecretsOf(box *secrets.Box, purpose string, sealed []byte) map[string]string {
	m := map[string]string{}
	if len(sealed) == 0 {
		return m
	}
	if b, err := box.Open(purpose, sealed); err == nil {
		_ = json.Unmarshal(b, &m) // a map that does not decode is treated as empty
	}
	return m
}

// PlanEntry is one execution in a plan.
type PlanEntry struct {
	Action    string           `json:"action"`
	Job       string           `json:"job"`
	Execution int              `json:"execution"`
	ID        *uuid.UUID       `json:"id"`
	VMID      *int             `json:"vm_id"`
	Node      string           `json:"node"`
	Because   []runplan.Reason `json:"because"`
	Cleanup   []string         `json:"cleanup"`
	Phase     string           `json:"phase"`
}

// Plan is exactly what saving an edit would do.
type Plan struct {
	// Version is the stack version the plan was computed from; saving needs it as If-Match.
	Version    int64         `json:"version"`
	Create     []PlanEntry   `json:"create"`
	Destroy    []PlanEntry   `json:"destroy"`
	Reapply    []PlanEntry   `json:"reapply"`
	Dependents []PlanEntry   `json:"dependents"`
	Order      []PlanEntry   `json:"order"`
	Addresses  PlanAddresses `json:"addresses"`
	RunNeeded  bool          `json:"run_needed"`
	// Resources is what saving adds to the team's usage (negative: frees, once the destroys
	// end), checked against its quotas in Problems.
	Resources horizon.Resources    `json:"resources"`
	Problems  []horizon.FieldError `json:"problems"`
}

// PlanAddresses are the addresses an edit attaches and frees.
type PlanAddresses struct {
	Attach []uuid.UUID `json:"attach"`
	Free   []uuid.UUID `json:"free"`
}

func (ed *edit) plan() Plan {
	p := Plan{Version: ed.l.stack.Version, Create: []PlanEntry{}, Destroy: []PlanEntry{}, Reapply: []PlanEntry{}, Dependents: []PlanEntry{},
		Order: []PlanEntry{}, Addresses: PlanAddresses{Attach: []uuid.UUID{}, Free: []uuid.UUID{}}, Problems: ed.problems}
	if p.Problems == nil {
		p.Problems = []horizon.FieldError{}
	}
	old := map[uuid.UUID]horizon.Execution{}
	for _, e := range ed.l.execs {
		old[e.ID] = e
	}
	for _, c := range ed.changes {
		entry := PlanEntry{Action: c.Action, Job: c.Job, Execution: c.Index, VMID: c.Execution.VMID, Node: c.Execution.Config.Node,
			Because: c.Because, Cleanup: c.Cleanup, Phase: c.PhaseName}
		if entry.Cleanup == nil {
			entry.Cleanup = []string{}
		}
		if c.Execution.ID != uuid.Nil {
			id := c.Execution.ID
			entry.ID = &id
		}
		switch c.Action {
		case runplan.ActionCreate:
			p.Create = append(p.Create, entry)
			if a := c.Execution.Config.AddressID; a != nil {
				p.Addresses.Attach = append(p.Addresses.Attach, *a)
			}
		case runplan.ActionDestroy:
			p.Destroy = append(p.Destroy, entry)
			if a := c.Execution.Config.AddressID; a != nil {
				p.Addresses.Free = append(p.Addresses.Free, *a)
			}
		case runplan.ActionReapply:
			p.Reapply = append(p.Reapply, entry)
			was, now := old[c.Execution.ID].Config.AddressID, c.Execution.Config.AddressID
			if !sameID(was, now) {
				if was != nil {
					p.Addresses.Free = append(p.Addresses.Free, *was)
				}
				if now != nil {
					p.Addresses.Attach = append(p.Addresses.Attach, *now)
				}
			}
		case runplan.ActionDependent:
			p.Dependents = append(p.Dependents, entry)
		}
		p.Order = append(p.Order, entry)
	}
	p.RunNeeded = len(ed.changes) > 0
	p.Resources = quota.Delta(editItems(ed))
	return p
}

func sameID(a, b *uuid.UUID) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
