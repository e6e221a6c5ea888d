package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/template"
	"horizon/shared/terraform"
	"horizon/workers/attempt"
)

// loadInstance loads a terraform action's step: its instance, the action as the template
// version that made the instance defines it (an upgrade or a version that dropped the action
// leaves it undoable with its own code), the Proxmox server of the stack's machines (whose API
// the module may call, with the environment a job's module gets) and, for an apply, its
// answers resolved like a script action's.
func (a *Actions) loadInstance(ctx context.Context, l attempt.Loaded) (*actionWork, error) {
	h := a.Steps
	sw := &stepWork{Loaded: l}
	w := &actionWork{stepWork: sw}
	var err error
	if sw.stack, err = store.StackGet(ctx, h.DB, auth.Scope{All: true}, *l.Run.StackID); err != nil {
		return nil, err
	}
	sw.StackID, sw.TeamID = sw.stack.ID, sw.stack.TeamID
	in, err := store.ActionInstanceGet(ctx, h.DB, sw.stack.ID, *l.Step.ActionInstanceID)
	if err != nil {
		return nil, err
	}
	w.instance = &in
	verb := "apply"
	if l.Step.Kind == horizon.StepActionDestroy {
		verb = "undo"
	}
	w.Label = fmt.Sprintf("%s of action %s #%d", verb, in.Action, in.Number)
	tv, err := store.TemplateVersionGet(ctx, h.DB, sw.stack.TemplateID, in.TemplateVersion)
	if err != nil {
		return nil, err
	}
	sw.def = &template.Definition{}
	if err := json.Unmarshal(tv.Definition, sw.def); err != nil {
		return nil, fmt.Errorf("decode template %s version %d: %w", sw.stack.TemplateID, in.TemplateVersion, err)
	}
	for i := range sw.def.Actions {
		if sw.def.Actions[i].Name == in.Action {
			w.action = &sw.def.Actions[i]
		}
	}
	if w.action == nil || w.action.Kind != template.ActionTerraform || w.action.Source == nil {
		return w, &attempt.Gone{Msg: fmt.Sprintf("template version %d has no terraform action %s", in.TemplateVersion, in.Action)}
	}
	// The module is not a job: a job stands in for it where the step's code reads one.
	sw.job = &template.Job{Name: in.Action, Source: *w.action.Source, Parameters: w.action.Parameters}
	execs, err := store.ExecutionsOfStack(ctx, h.DB, sw.stack.ID, false)
	if err != nil {
		return nil, err
	}
	for _, e := range execs {
		if e.State != horizon.ExecutionActive || e.Config.ProxmoxServerID == nil {
			continue
		}
		srv, err := store.ProxmoxServerGet(ctx, h.DB, *e.Config.ProxmoxServerID)
		if err != nil {
			return w, attempt.IfNotFound(err, "the Proxmox server %s of the stack no longer exists", *e.Config.ProxmoxServerID)
		}
		sw.server = &srv
		if token, err := h.Box.OpenString(horizon.PurposeProxmoxTokenSecret, srv.TokenSecret); err == nil {
			w.Masker.Add(token.Reveal())
		}
		break
	}
	if l.Step.Kind == horizon.StepActionDestroy {
		return w, nil
	}
	if w.asked, err = store.ActionRunGet(ctx, h.DB, in.RunID); err != nil {
		return nil, err
	}
	if err := a.loadAnswers(ctx, w); err != nil {
		return nil, err
	}
	return w, nil
}

// instanceVariables are an instance's module's candidate variables: its answers and the
// horizon_* values an action gets (horizon_name, unique to the instance, and horizon_tags).
func instanceVariables(w *actionWork) map[string]any {
	vars := map[string]any{}
	for k, v := range w.effective.Parameters {
		vars[k] = v
	}
	for k, v := range w.effective.Inputs {
		vars[k] = v
	}
	vars["horizon_name"] = horizon.ActionInstanceName(w.stack.Name, w.instance.Action, w.instance.Number)
	vars["horizon_tags"] = horizon.VMTags(w.stack)
	return vars
}

// sealedVariables is what an instance keeps of its apply's variables: the values, and which of
// them are secret (for the undo's masker).
type sealedVariables struct {
	Vars    map[string]any `json:"vars"`
	Secrets []string       `json:"secrets"`
}

func (a *Actions) instanceWorkdir(ctx context.Context, w *actionWork, out *attempt.Log, vars map[string]any) (*terraform.Workdir, func(), error) {
	ws := horizon.ActionInstanceWorkspace(w.stack.ID, w.instance.Action, w.instance.Number)
	return a.Steps.moduleWorkdir(ctx, w.stepWork, out, *w.action.Source, w.instance.Commit, ws, vars)
}

// applyInstance applies the action's module in the instance's workspace, at the commit the
// stack's template version pinned. Before Terraform runs, the instance keeps the variables it
// is given (sealed): its undo gives them again, even if this apply fails halfway. Its outputs
// are kept with the run (secret ones sealed).
func (a *Actions) applyInstance(ctx context.Context, w *actionWork, out *attempt.Log) (attempt.Result, error) {
	h := a.Steps
	if w.inputsErr != nil {
		return attempt.Result{}, w.inputsErr
	}
	vars := instanceVariables(w)
	kept := sealedVariables{Vars: vars, Secrets: []string{}}
	for _, v := range vars {
		if s, ok := v.(string); ok && s != "" && w.Masker.Mask(s) != s {
			kept.Secrets = append(kept.Secrets, s)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return attempt.Result{}, err
	}
	if err := store.ActionInstanceSetVariables(ctx, h.DB, w.instance.ID, h.Box.Seal(horizon.PurposeInstanceVariables, b)); err != nil {
		return attempt.Result{}, err
	}
	wd, cleanup, err := a.instanceWorkdir(ctx, w, out, vars)
	if err != nil {
		return attempt.Result{}, err
	}
	defer cleanup()
	if err := retryTransient(ctx, out, "terraform init", wd.Init); err != nil {
		return attempt.Result{}, err
	}
	if err := retryTransient(ctx, out, "terraform apply", wd.Apply); err != nil {
		return attempt.Result{}, err
	}
	outputs, secretOutputs, err := moduleOutputs(ctx, wd, w.stepWork)
	if err != nil {
		return attempt.Result{}, err
	}
	names := make([]string, 0, len(outputs)+len(secretOutputs))
	for k := range outputs {
		names = append(names, k)
	}
	for k := range secretOutputs {
		names = append(names, k+" (secret)")
	}
	sort.Strings(names)
	out.Say("instance #%d of %s applied; outputs: %v", w.instance.Number, w.instance.Action, names)
	sealed := h.sealMap(horizon.PurposeActionOutputs, secretOutputs)
	return attempt.Result{Record: func(ctx context.Context, tx pgx.Tx) error {
		if err := store.ActionRunSetOutputs(ctx, tx, w.Run.ID, outputs, sealed); err != nil {
			return err
		}
		return store.ActionInstanceApplied(ctx, tx, w.instance.ID)
	}}, nil
}

// destroyInstance undoes the instance: terraform destroy in its workspace with the code and
// the variables of its apply, then the workspace deleted. An instance whose apply never got as
// far as Terraform holds nothing and is only marked undone.
func (a *Actions) destroyInstance(ctx context.Context, w *actionWork, out *attempt.Log) (attempt.Result, error) {
	h := a.Steps
	undone := attempt.Result{Record: func(ctx context.Context, tx pgx.Tx) error {
		return store.ActionInstanceEnd(ctx, tx, w.instance.ID, horizon.InstanceUndone)
	}}
	if w.instance.Variables == nil {
		out.Say("instance #%d of %s never reached Terraform: nothing to destroy", w.instance.Number, w.instance.Action)
		return undone, nil
	}
	b, err := h.Box.Open(horizon.PurposeInstanceVariables, w.instance.Variables)
	if err != nil {
		return attempt.Result{}, fmt.Errorf("open the variables of instance %s: %w", w.instance.ID, err)
	}
	var kept sealedVariables
	if err := json.Unmarshal(b, &kept); err != nil {
		return attempt.Result{}, fmt.Errorf("decode the variables of instance %s: %w", w.instance.ID, err)
	}
	w.Masker.Add(kept.Secrets...)
	wd, cleanup, err := a.instanceWorkdir(ctx, w, out, kept.Vars)
	if err != nil {
		return attempt.Result{}, err
	}
	defer cleanup()
	if err := retryTransient(ctx, out, "terraform init", wd.Init); err != nil {
		return attempt.Result{}, err
	}
	if err := retryTransient(ctx, out, "terraform destroy", wd.Destroy); err != nil {
		return attempt.Result{}, err
	}
	if err := wd.DeleteWorkspace(ctx); err != nil {
		return attempt.Result{}, err
	}
	out.Say("instance #%d of %s undone (template version %d); workspace %s deleted", w.instance.Number, w.instance.Action,
		w.instance.TemplateVersion, horizon.ActionInstanceWorkspace(w.stack.ID, w.instance.Action, w.instance.Number))
	return undone, nil
}
