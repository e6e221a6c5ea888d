package stacks

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/runplan"
	"horizon/shared/store"
)

// ActionInstance is what a terraform action's run left on the stack: its module applied in a
// workspace of its own, with the answers it was given and the outputs it produced (secret ones
// as {"secret": true}, revealed through its run), undone on its own.
type ActionInstance struct {
	ID     uuid.UUID `json:"id"`
	Number int       `json:"number"`
	Action string    `json:"action"`
	// State: applying, active, failed (its apply failed or was canceled: undo it to remove what
	// it may have made), undoing.
	State string `json:"state"`
	// TemplateVersion is the version whose code made it, and whose code undoes it.
	TemplateVersion int        `json:"template_version"`
	Commit          string     `json:"commit"`
	Workspace       string     `json:"workspace"`
	RunID           uuid.UUID  `json:"run_id"`
	CreatedBy       *uuid.UUID `json:"created_by"`
	CreatedAt       time.Time  `json:"created_at"`
	AppliedAt       *time.Time `json:"applied_at"`
	Parameters      any        `json:"parameters"`
	Inputs          any        `json:"inputs"`
	Outputs         any        `json:"outputs"`
	// AllowedActions: "undo" when DELETE may undo it now.
	AllowedActions []string `json:"allowed_actions"`
}

// actionUndo is what can be done to an instance: undo it.
const actionUndo = "undo"

// GetActionInstances lists the stack's terraform action instances that are not undone, newest
// first.
func GetActionInstances(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		s, err := store.StackGet(ctx, d.DB, r.Who.Scope(), r.ID)
		if err != nil {
			return err
		}
		ins, err := store.ActionInstancesOfStack(ctx, d.DB, s.ID)
		if err != nil {
			return err
		}
		busy := notBusy(ctx, d.DB, s) != nil
		out := make([]ActionInstance, 0, len(ins))
		for _, in := range ins {
			a, err := toInstance(ctx, d, s, in, capabilities(r.Who).Write && !busy && undoable(s) == nil)
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		return c.JSON(api.NewList(out, nil))
	})
}

func toInstance(ctx context.Context, d api.Deps, s horizon.Stack, in horizon.ActionInstance, mayUndo bool) (ActionInstance, error) {
	out := ActionInstance{ID: in.ID, Number: in.Number, Action: in.Action, State: in.State, TemplateVersion: in.TemplateVersion,
		Commit: in.Commit, Workspace: horizon.ActionInstanceWorkspace(s.ID, in.Action, in.Number), RunID: in.RunID, CreatedBy: in.CreatedBy,
		CreatedAt: in.CreatedAt, AppliedAt: in.AppliedAt, AllowedActions: []string{}}
	asked, err := store.ActionRunGet(ctx, d.DB, in.RunID)
	if err != nil {
		return out, err
	}
	info, err := actionInfo(d, asked)
	if err != nil {
		return out, err
	}
	out.Parameters, out.Inputs, out.Outputs = info.Parameters, info.Inputs, info.Outputs
	if mayUndo && in.State != horizon.InstanceApplying && in.State != horizon.InstanceUndoing {
		out.AllowedActions = append(out.AllowedActions, actionUndo)
	}
	return out, nil
}

// undoable refuses an undo on a stack whose instances are not Horizon's to undo one by one: a
// draft has none, a removed stack's are gone or abandoned, and a stack whose removal failed
// finishes it (which undoes them all).
func undoable(s horizon.Stack) error {
	if err := removalPending(s); err != nil {
		return err
	}
	if s.State == horizon.StackDraft || s.State == horizon.StackRemoved {
		return problem.Conflict("The stack is %s: it has no action instance to undo.", s.State)
	}
	return nil
}

// UndoActionInstance starts the run that undoes one instance (202 with the run, of kind
// action): terraform destroy in its workspace with the code of the template version that made
// it. An instance already undone, or being undone, is a conflict (409).
func UndoActionInstance(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		return startRunOn(c, d, r.Who, r.ID, refusesRemoval, func(ctx context.Context, tx pgx.Tx, l *loaded) (launch, error) {
			in, err := store.ActionInstanceGet(ctx, tx, l.stack.ID, r.Sub)
			if errors.Is(err, horizon.ErrNotFound) {
				return launch{}, problem.NotFound("Action instance " + r.Sub.String())
			}
			if err != nil {
				return launch{}, err
			}
			switch in.State {
			case horizon.InstanceUndone, horizon.InstanceAbandoned:
				return launch{}, problem.Conflict("Action instance %s of %s is already %s.", r.Sub, in.Action, in.State)
			case horizon.InstanceUndoing:
				return launch{}, problem.Conflict("Action instance %s of %s is being undone.", r.Sub, in.Action)
			}
			if err := undoable(l.stack); err != nil {
				return launch{}, err
			}
			return launch{kind: horizon.RunAction, steps: runplan.UndoActions([]horizon.ActionInstance{in}),
				then: func(ctx context.Context, tx pgx.Tx, run horizon.Run) error {
					return store.ActionRunInsert(ctx, tx, horizon.ActionRun{RunID: run.ID, StackID: l.stack.ID, Action: in.Action,
						Kind: "terraform", TemplateVersion: in.TemplateVersion, InstanceID: &in.ID, Undo: true})
				}}, nil
		})
	})
}

// removalSteps plans a stack's removal: its action instances undone, newest first, then every
// execution destroyed in reverse phase order (cleanup scripts first).
func removalSteps(ctx context.Context, q store.Querier, l *loaded) ([]horizon.Step, error) {
	ins, err := store.ActionInstancesOfStack(ctx, q, l.stack.ID)
	if err != nil {
		return nil, err
	}
	return runplan.Then(runplan.UndoActions(ins), runplan.Destroy(l.def, l.execs, runplan.All)), nil
}
