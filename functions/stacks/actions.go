package stacks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
	"horizon/shared/template"
)

// Action is one action a stack's template version offers, as its form: the JSON Schema of its
// parameters, its inputs prefilled from the stack's outputs, and the machines it may run on.
type Action struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Kind        string           `json:"kind"`
	Job         *string          `json:"job"`
	Parameters  *template.Schema `json:"parameters"`
	Inputs      []ActionInput    `json:"inputs"`
	Outputs     []ActionOutput   `json:"outputs"`
	// Executions are the built machines of a script action's job; Execution is the one
	// preselected (the job has one), else null.
	Executions []ActionMachine `json:"executions"`
	Execution  *int            `json:"execution"`
}

// ActionInput is one input of an action and its prefill. A prefill from a secret output is not
// sent (Secret): the worker resolves it when the action runs, unless the user gives a value.
type ActionInput struct {
	Name string `json:"name"`
	// From is the stack output it is prefilled from: "db.outputs.ip".
	From   string `json:"from"`
	Secret bool   `json:"secret"`
	// Value is the prefill (null for a secret, or when it cannot be resolved: Problem says why).
	Value   any     `json:"value"`
	Problem *string `json:"problem"`
}

// ActionOutput is an output a script action declares.
type ActionOutput struct {
	Name        string `json:"name"`
	Secret      bool   `json:"secret"`
	Description string `json:"description"`
}

// ActionMachine is a machine a script action may run on.
type ActionMachine struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
}

// ActionRequest is the body of POST /v1/stacks/{id}/actions/{name}.
type ActionRequest struct {
	api.Optional                // the body may be left out
	Parameters   map[string]any `json:"parameters"`
	// Inputs given replace their prefills; those left out are resolved when the action runs.
	Inputs map[string]any `json:"inputs"`
	// Execution is the index of the machine of the action's job to run on; it may be left out
	// when the job has one built machine.
	Execution *int `json:"execution"`
}

// GetActions lists the actions the stack's template version offers, with their prefills
// resolved from the stack's current outputs.
func GetActions(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		l, err := load(ctx, d.DB, r.Who.Scope(), r.ID, false)
		if err != nil {
			return err
		}
		outs, err := stackOutputs(d, l)
		if err != nil {
			return err
		}
		form := template.Form(l.def, template.Modules{})
		items := []Action{}
		for i := range l.def.Actions {
			items = append(items, toAction(l, &l.def.Actions[i], form.Actions[i].Parameters, outs))
		}
		return c.JSON(api.NewList(items, nil))
	})
}

// RunAction starts a run of one of the stack's actions (202 with the run, of kind action).
func RunAction(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[ActionRequest]) error {
		name := c.Params("name")
		return startRunOn(c, d, r.Who, r.ID, refusesRemoval, func(ctx context.Context, tx pgx.Tx, l *loaded) (launch, error) {
			var action *template.Action
			for i := range l.def.Actions {
				if l.def.Actions[i].Name == name {
					action = &l.def.Actions[i]
				}
			}
			if action == nil {
				return launch{}, problem.NotFound("Action " + name)
			}
			if err := actionable(l.stack); err != nil {
				return launch{}, err
			}
			outs, err := stackOutputs(d, l)
			if err != nil {
				return launch{}, err
			}
			asked, exec, err := checkAction(d, l, action, r.Body, outs)
			if err != nil {
				return launch{}, err
			}
			if action.Kind == template.ActionTerraform {
				return terraformAction(l, action, asked, r.Who)
			}
			steps := []horizon.Step{{Phase: 0, PhaseName: action.Name, Job: exec.Job, ExecutionID: &exec.ID, ExecutionIndex: &exec.Index,
				Kind: horizon.StepActionScript}}
			return launch{kind: horizon.RunAction, steps: steps, then: func(ctx context.Context, tx pgx.Tx, run horizon.Run) error {
				asked.RunID = run.ID
				return store.ActionRunInsert(ctx, tx, asked)
			}}, nil
		})
	})
}

// terraformAction is the run of a terraform action: one action_apply step, on a new instance
// of the action (its own workspace) whose module is the commit the stack pins for the action
// (its template version's, or a force retry's re-pin).
func terraformAction(l *loaded, a *template.Action, asked horizon.ActionRun, who auth.Principal) (launch, error) {
	commit := l.stack.ActionCommit(l.version, a.Name)
	if commit == "" {
		return launch{}, problem.Conflict("Template version %d pinned no commit for action %s: upgrade the stack to a version that does.",
			l.stack.TemplateVersion, a.Name)
	}
	steps := []horizon.Step{{PhaseName: a.Name, Job: a.Name, Kind: horizon.StepActionApply}}
	return launch{kind: horizon.RunAction, steps: steps, then: func(ctx context.Context, tx pgx.Tx, run horizon.Run) error {
		in, err := store.ActionInstanceInsert(ctx, tx, horizon.ActionInstance{StackID: l.stack.ID, Action: a.Name,
			TemplateVersion: l.stack.TemplateVersion, Commit: commit, RunID: run.ID, CreatedBy: &who.UserID})
		if err != nil {
			return err
		}
		if err := store.StepsSetActionInstance(ctx, tx, run.ID, in.ID, in.Number); err != nil {
			return err
		}
		asked.RunID, asked.InstanceID = run.ID, &in.ID
		return store.ActionRunInsert(ctx, tx, asked)
	}}, nil
}

// actionable refuses an action on a stack that is not deployed (or failed after a deploy); a
// run in progress and a failed removal are refused before (startOn).
func actionable(s horizon.Stack) error {
	if s.State != horizon.StackDeployed && (s.State != horizon.StackFailed || s.DeployedAt == nil) {
		return problem.Conflict("The stack is %s: actions run on a deployed stack (or a failed one whose machines exist).", s.State)
	}
	return nil
}

// checkAction checks a request against the action and the stack, and returns what the run is
// asked (secrets sealed, generated ones included) and the machine it runs on. Every problem is
// reported at once (422), an input left to a prefill that has no value among them.
func checkAction(d api.Deps, l *loaded, a *template.Action, req ActionRequest, outs map[string][]execOutputs) (horizon.ActionRun, horizon.Execution, error) {
	var p horizon.Problems
	params := map[string]any{}
	for k, v := range req.Parameters {
		params[k] = v
	}
	p.Merge("parameters", a.Parameters.Check(params))
	plain, secret := map[string]any{}, map[string]string{}
	for _, pm := range a.Parameters {
		v, ok := params[pm.Name]
		if !ok || v == nil {
			continue
		}
		if s, isString := v.(string); pm.Secret && isString {
			secret[pm.Name] = s
		} else {
			plain[pm.Name] = v
		}
	}
	// A secret the template generates and the user left empty is generated here, once per run
	// (for a terraform action, per instance: its undo gives the module the same value), and
	// sealed with the run's secret answers: shown as {"secret": true}, like a job's.
	for _, pm := range a.Parameters {
		if pm.Secret && pm.Generate && secret[pm.Name] == "" {
			secret[pm.Name] = randomSecret()
		}
	}
	inputs, secretInputs := map[string]any{}, map[string]string{}
	for _, name := range sortedNames(req.Inputs) {
		ref, ok := a.Inputs[name]
		v := req.Inputs[name]
		switch {
		case !ok:
			p.Add("inputs."+name, "unknown input: the action's inputs are %v", sortedNames(a.Inputs))
			continue
		case v == nil:
			continue // null: the prefill
		}
		if in := prefill(name, ref, outs); in.Secret {
			s, isString := v.(string)
			if !isString {
				p.Add("inputs."+name, "replaces a secret output: want a string")
				continue
			}
			secretInputs[name] = s
		} else {
			inputs[name] = v
		}
	}
	// An input left to its prefill that cannot be resolved would fail the run in the worker:
	// the form cannot be satisfied as sent, so nothing starts.
	for _, name := range sortedNames(a.Inputs) {
		if v, given := req.Inputs[name]; given && v != nil {
			continue
		}
		if in := prefill(name, a.Inputs[name], outs); in.Problem != nil {
			p.Add("inputs."+name, "%s: give it a value", *in.Problem)
		}
	}
	if a.Kind == template.ActionTerraform {
		if req.Execution != nil {
			p.Add("execution", "a terraform action runs on no machine: leave it out")
		}
		if err := p.SortedErr(); err != nil {
			return horizon.ActionRun{}, horizon.Execution{}, err
		}
		return horizon.ActionRun{StackID: l.stack.ID, Action: a.Name, Kind: string(a.Kind), TemplateVersion: l.stack.TemplateVersion,
			Parameters: plain, Inputs: inputs, SecretParameters: sealStrings(d, horizon.PurposeActionParameters, secret),
			SecretInputs: sealStrings(d, horizon.PurposeActionInputs, secretInputs)}, horizon.Execution{}, nil
	}
	var machines []horizon.Execution
	for _, e := range l.execs {
		if e.Job == a.Job && e.State == horizon.ExecutionActive && e.AppliedHash != nil {
			machines = append(machines, e)
		}
	}
	var exec horizon.Execution
	switch {
	case req.Execution == nil && len(machines) == 1:
		exec = machines[0]
	case req.Execution == nil:
		p.Add("execution", "required: the job %s has %d built machines; name the one to run on", a.Job, len(machines))
	default:
		i := slices.IndexFunc(machines, func(e horizon.Execution) bool { return e.Index == *req.Execution })
		if i < 0 {
			p.Add("execution", "%s[%d] is not a built machine of job %s", a.Job, *req.Execution, a.Job)
		} else {
			exec = machines[i]
		}
	}
	if err := p.SortedErr(); err != nil {
		return horizon.ActionRun{}, exec, err
	}
	asked := horizon.ActionRun{StackID: l.stack.ID, Action: a.Name, Kind: string(a.Kind), TemplateVersion: l.stack.TemplateVersion,
		ExecutionID: &exec.ID, Job: exec.Job, ExecutionIndex: &exec.Index, Parameters: plain, Inputs: inputs,
		SecretParameters: sealStrings(d, horizon.PurposeActionParameters, secret), SecretInputs: sealStrings(d, horizon.PurposeActionInputs, secretInputs)}
	return asked, exec, nil
}

func sealStrings(d api.Deps, purpose string, m map[string]string) []byte {
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m) // a map of strings always marshals
	return d.Box.Seal(purpose, b)
}

// execOutputs are one active execution's outputs: values not secret, and the names of the
// secret ones (never their values).
type execOutputs struct {
	values  map[string]any
	secrets []string
}

// stackOutputs reads the outputs of the stack's active executions, by job, in execution order.
func stackOutputs(d api.Deps, l *loaded) (map[string][]execOutputs, error) {
	out := map[string][]execOutputs{}
	for _, e := range l.execs {
		if e.State != horizon.ExecutionActive {
			continue
		}
		names, err := secretOutputNames(d, e)
		if err != nil {
			return nil, err
		}
		out[e.Job] = append(out[e.Job], execOutputs{values: e.Outputs, secrets: names})
	}
	return out, nil
}

// prefill resolves one input's prefill as a job's input is resolved (a list for a job of
// several executions), without ever reading a secret output's value.
func prefill(name, ref string, outs map[string][]execOutputs) ActionInput {
	in := ActionInput{Name: name, From: ref}
	r, err := template.ParseReference(ref)
	if err != nil {
		msg := err.Error()
		in.Problem = &msg
		return in
	}
	in.From = fmt.Sprintf("%s.outputs.%s", r.Job, r.Output)
	var values []any
	for _, e := range outs[r.Job] {
		if slices.Contains(e.secrets, r.Output) {
			in.Secret = true
			continue
		}
		if v, ok := e.values[r.Output]; ok {
			values = append(values, v)
		}
	}
	switch {
	case in.Secret:
		return in // resolved by the worker
	case len(outs[r.Job]) == 0:
		msg := fmt.Sprintf("job %s has no execution to take %s from", r.Job, r.Output)
		in.Problem = &msg
	case len(values) < len(outs[r.Job]):
		msg := fmt.Sprintf("job %s has no output %s (has it run?)", r.Job, r.Output)
		in.Problem = &msg
	case len(values) == 1:
		in.Value = values[0]
	default:
		in.Value = values
	}
	return in
}

func toAction(l *loaded, a *template.Action, schema *template.Schema, outs map[string][]execOutputs) Action {
	out := Action{Name: a.Name, Description: a.Description, Kind: string(a.Kind), Parameters: schema, Inputs: []ActionInput{},
		Outputs: []ActionOutput{}, Executions: []ActionMachine{}}
	if a.Job != "" {
		job := a.Job
		out.Job = &job
	}
	for _, name := range sortedNames(a.Inputs) {
		out.Inputs = append(out.Inputs, prefill(name, a.Inputs[name], outs))
	}
	for _, o := range a.Outputs {
		out.Outputs = append(out.Outputs, ActionOutput{Name: o.Name, Secret: o.Secret, Description: o.Description})
	}
	if a.Kind == template.ActionScript {
		for _, e := range l.execs {
			if e.Job == a.Job && e.State == horizon.ExecutionActive && e.AppliedHash != nil {
				out.Executions = append(out.Executions, ActionMachine{Index: e.Index, Name: e.MachineName(l.stack.Name)})
			}
		}
		if len(out.Executions) == 1 {
			i := out.Executions[0].Index
			out.Execution = &i
		}
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// withAction adds to a run of kind action what it ran: the action, its machine, its answers and
// its outputs (secret ones as {"secret": true}).
func withAction(ctx context.Context, d api.Deps, r Run) (Run, error) {
	if r.Kind != string(horizon.RunAction) {
		return r, nil
	}
	a, err := store.ActionRunGet(ctx, d.DB, r.ID)
	if errors.Is(err, horizon.ErrNotFound) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	info, err := actionInfo(d, a)
	if err != nil {
		return r, err
	}
	r.Action = info
	return r, nil
}

// actionInfo is an action run's record as the API shows it: secret answers and outputs as
// {"secret": true}.
func actionInfo(d api.Deps, a horizon.ActionRun) (*api.ActionRun, error) {
	info := &api.ActionRun{Name: a.Action, Execution: a.ExecutionIndex, Parameters: map[string]any{}, Inputs: map[string]any{},
		Outputs: map[string]any{}, Instance: a.InstanceID, Undo: a.Undo}
	if a.Job != "" {
		info.Job = &a.Job
	}
	for k, v := range a.Parameters {
		info.Parameters[k] = v
	}
	for k, v := range a.Inputs {
		info.Inputs[k] = v
	}
	for k, v := range a.Outputs {
		info.Outputs[k] = v
	}
	for _, s := range []struct {
		purpose string
		sealed  []byte
		into    map[string]any
	}{{horizon.PurposeActionParameters, a.SecretParameters, info.Parameters}, {horizon.PurposeActionInputs, a.SecretInputs, info.Inputs},
		{horizon.PurposeActionOutputs, a.SecretOutputs, info.Outputs}} {
		if len(s.sealed) == 0 {
			continue
		}
		b, err := d.Box.Open(s.purpose, s.sealed)
		if err != nil {
			return nil, fmt.Errorf("open %s of run %s: %w", s.purpose, a.RunID, err)
		}
		var names map[string]string
		if err := json.Unmarshal(b, &names); err != nil {
			return nil, fmt.Errorf("decode %s of run %s: %w", s.purpose, a.RunID, err)
		}
		for k := range names {
			s.into[k] = map[string]any{"secret": true}
		}
	}
	return info, nil
}
