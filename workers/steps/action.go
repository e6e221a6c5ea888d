package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"

	"horizon/shared/answers"
	"horizon/shared/auth"
	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/template"
	"horizon/workers/attempt"
)

// Actions runs action:run tasks: the steps of action runs. A script action's runs the action's
// script over SSH on the one machine of its job the user chose — with the job scripts' own code
// (runScripts: environment, output files, masking, markers). A terraform action's applies the
// action's module in its instance's own workspace, or destroys it (tfaction.go). All run under
// the same attempt lifecycle (timeout, cancel, heartbeat); none takes a node gate.
type Actions struct {
	Steps *Handler
}

// actionWork is a script action's attempt: a step's work on the chosen execution (its stack,
// machine and job, whose source holds the script) with the action and what it was asked.
type actionWork struct {
	*stepWork
	action *template.Action
	asked  horizon.ActionRun
	// instance is the terraform action instance an action_apply or action_destroy step works on.
	instance *horizon.ActionInstance
}

// ProcessTask implements asynq.Handler.
func (a *Actions) ProcessTask(ctx context.Context, t *asynq.Task) error {
	return attempt.Process(ctx, &a.Steps.Lifecycle, a, t)
}

// Load implements attempt.Kind: the stack, the chosen execution and its machine, the action of
// the template version the run was asked against, and its answers: parameters (secret ones
// opened), inputs typed by the user, the others resolved now from the stack's outputs (secret
// ones included, which the API never sent). Every secret is taught to the masker.
func (a *Actions) Load(ctx context.Context, l attempt.Loaded) (*actionWork, error) {
	h := a.Steps
	if (l.Step.Kind == horizon.StepActionApply || l.Step.Kind == horizon.StepActionDestroy) && l.Step.ActionInstanceID != nil &&
		l.Run.StackID != nil {
		return a.loadInstance(ctx, l)
	}
	if l.Step.Kind != horizon.StepActionScript || l.Step.ExecutionID == nil || l.Run.StackID == nil {
		return nil, attempt.ErrStale
	}
	sw := &stepWork{Loaded: l}
	w := &actionWork{stepWork: sw}
	var err error
	if w.asked, err = store.ActionRunGet(ctx, h.DB, l.Run.ID); err != nil {
		return nil, err
	}
	w.Label = fmt.Sprintf("action %s on %s[%d]", w.asked.Action, l.Step.Job, deref(l.Step.ExecutionIndex))
	if sw.stack, err = store.StackGet(ctx, h.DB, auth.Scope{All: true}, *l.Run.StackID); err != nil {
		return nil, err
	}
	sw.StackID, sw.TeamID = sw.stack.ID, sw.stack.TeamID
	if sw.exec, err = store.ExecutionGet(ctx, h.DB, *l.Step.ExecutionID); err != nil {
		return nil, err
	}
	tv, err := store.TemplateVersionGet(ctx, h.DB, sw.stack.TemplateID, w.asked.TemplateVersion)
	if err != nil {
		return nil, err
	}
	sw.def = &template.Definition{}
	if err := json.Unmarshal(tv.Definition, sw.def); err != nil {
		return nil, fmt.Errorf("decode template %s version %d: %w", sw.stack.TemplateID, w.asked.TemplateVersion, err)
	}
	for i := range sw.def.Actions {
		if sw.def.Actions[i].Name == w.asked.Action {
			w.action = &sw.def.Actions[i]
		}
	}
	if w.action == nil || w.action.Kind != template.ActionScript {
		return w, &attempt.Gone{Msg: fmt.Sprintf("template version %d has no script action %s", w.asked.TemplateVersion, w.asked.Action)}
	}
	if sw.job = sw.def.Job(w.action.Job); sw.job == nil {
		return w, &attempt.Gone{Msg: fmt.Sprintf("template version %d has no job %s", w.asked.TemplateVersion, w.action.Job)}
	}
	if sw.exec.State != horizon.ExecutionActive || sw.exec.AppliedHash == nil {
		return w, &attempt.Gone{Msg: fmt.Sprintf("the machine %s[%d] is no longer built", sw.exec.Job, sw.exec.Index)}
	}
	if err := h.loadMachine(ctx, sw); err != nil {
		var gone *attempt.Gone
		if errors.As(err, &gone) {
			return w, err
		}
		return nil, err
	}
	if err := a.loadAnswers(ctx, w); err != nil {
		return nil, err
	}
	return w, nil
}

// loadAnswers resolves the action's effective parameters and inputs; an input that cannot be
// resolved fails the step when it runs (inputsErr).
func (a *Actions) loadAnswers(ctx context.Context, w *actionWork) error {
	h := a.Steps
	own, err := h.openMap(horizon.PurposeSecretOutputs, w.exec.SecretOutputs)
	if err != nil {
		return err
	}
	for _, v := range own {
		w.Masker.Add(v)
	}
	secretParams, err := h.openMap(horizon.PurposeActionParameters, w.asked.SecretParameters)
	if err != nil {
		return err
	}
	secretInputs, err := h.openMap(horizon.PurposeActionInputs, w.asked.SecretInputs)
	if err != nil {
		return err
	}
	outputs, err := h.stackOutputs(ctx, w.stepWork)
	if err != nil {
		return err
	}
	// Inputs the user typed are taken as typed; the others are resolved like a job's.
	typed := map[string]any{}
	for k, v := range w.asked.Inputs {
		typed[k] = v
	}
	for k, v := range secretInputs {
		typed[k] = v
		w.Masker.Add(v)
	}
	resolve := template.Job{Parameters: w.action.Parameters, Inputs: map[string]string{}}
	for name, ref := range w.action.Inputs {
		if _, ok := typed[name]; !ok {
			resolve.Inputs[name] = ref
		}
	}
	ef, err := answers.Resolve(&resolve, w.asked.Parameters, secretParams, outputs)
	w.Masker.Add(ef.Secrets...)
	for k, v := range typed {
		ef.Inputs[k] = v
	}
	w.effective, w.inputsErr = ef, err
	return nil
}

// Unneeded implements attempt.Kind: an action asked for always runs.
func (a *Actions) Unneeded(*actionWork) string { return "" }

// Do implements attempt.Kind: it runs the action's script on the machine and keeps what it
// emitted with the run.
func (a *Actions) Do(ctx context.Context, w *actionWork, out *attempt.Log, _ *gate.Lease) (attempt.Result, error) {
	h := a.Steps
	switch w.Step.Kind {
	case horizon.StepActionApply:
		return a.applyInstance(ctx, w, out)
	case horizon.StepActionDestroy:
		return a.destroyInstance(ctx, w, out)
	}
	if w.inputsErr != nil {
		return attempt.Result{}, w.inputsErr
	}
	scripts := []template.Script{{Name: w.action.Name, Path: w.action.Path}}
	res, err := h.runScripts(ctx, w.stepWork, out, w.exec.Outputs, scripts, "action")
	if err != nil {
		return attempt.Result{}, err
	}
	if err := checkOutputs(w.action.Outputs, res); err != nil {
		return attempt.Result{}, err
	}
	names := make([]string, 0, len(res.outputs)+len(res.secrets))
	for k := range res.outputs {
		names = append(names, k)
	}
	for k := range res.secrets {
		names = append(names, k+" (secret)")
	}
	if len(names) > 0 {
		out.Say("outputs: %s", strings.Join(sorted(names), ", "))
	}
	sealed := h.sealMap(horizon.PurposeActionOutputs, res.secrets)
	return attempt.Result{Record: func(ctx context.Context, tx pgx.Tx) error {
		return store.ActionRunSetOutputs(ctx, tx, w.Run.ID, res.outputs, sealed)
	}}, nil
}
