package stacks

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// How a run of a stack starts: every route that starts one (deploy, edit, upgrade, retry, run
// again, action, undo, remove) is startRunOn and its decision.

// runOwner is a stack as the owner of runs (api.RunOwner): writers change its runs, within their
// teams.
var runOwner = api.RunOwner{
	Noun: "stack",
	Name: "stack",
	Lock: func(ctx context.Context, tx pgx.Tx, who auth.Principal, id uuid.UUID) (api.OwnerRef, error) {
		s, err := store.StackGetForUpdate(ctx, tx, who.Scope(), id)
		if err != nil {
			return api.OwnerRef{}, err
		}
		return api.OwnerRef{Runs: store.OfStack(s.ID), ID: s.ID, StackID: s.ID, TeamID: s.TeamID}, nil
	},
	Location: func(stack, run uuid.UUID) string { return "/v1/stacks/" + stack.String() + "/runs/" + run.String() },
	Actions: func(r horizon.Run, who auth.Principal) []string {
		return horizon.RunActions(r.State, capabilities(who))
	},
}

// launch is what a decision starts: a run of kind with steps (its Nagios step is added), and
// then, when set, what the run records beside them in the same transaction (an action's
// answers). A zero launch starts nothing: the decision made its change itself.
type launch struct {
	kind  horizon.RunKind
	steps []horizon.Step
	then  func(ctx context.Context, tx pgx.Tx, run horizon.Run) error
}

// removal tells startOn whether the route finishes a failed removal (remove, retry), which every
// other route refuses.
type removal bool

const (
	refusesRemoval  removal = false
	finishesRemoval removal = true
)

// startRunOn starts what decide decides on the stack at id (startOn) and answers: 202 with the
// run, or 204 when decide started none.
func startRunOn(c *fiber.Ctx, d api.Deps, who auth.Principal, id uuid.UUID, rm removal,
	decide func(ctx context.Context, tx pgx.Tx, l *loaded) (launch, error)) error {
	run, err := startOn(c.UserContext(), d, who, id, rm, decide)
	if err != nil {
		return err
	}
	if run != nil {
		return accepted(c, d, *run, who)
	}
	if s, err := store.StackGet(c.UserContext(), d.DB, who.Scope(), id); err == nil {
		d.Notify(c.UserContext(), events.Event{Type: events.Stack, ID: s.ID, StackID: s.ID, TeamID: s.TeamID, State: string(s.State)})
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// startOn is how every run of a stack starts. In one transaction it loads the stack at id for
// update with its template and executions (404 outside who's scope) and refuses while a run is
// in progress (409 naming it) or, unless rm finishes a removal, while the stack's removal
// failed; decide then refuses (409, 422) or says what to run. The run and its steps are
// written, the stack moves to the state the kind gives and the activity is recorded. The run
// is nil when decide started none.
func startOn(ctx context.Context, d api.Deps, who auth.Principal, id uuid.UUID, rm removal,
	decide func(ctx context.Context, tx pgx.Tx, l *loaded) (launch, error)) (*horizon.Run, error) {
	return store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (*horizon.Run, error) {
		l, err := load(ctx, tx, who.Scope(), id, true)
		if err != nil {
			return nil, err
		}
		if err := notBusy(ctx, tx, l.stack); err != nil {
			return nil, err
		}
		if rm == refusesRemoval {
			if err := removalPending(l.stack); err != nil {
				return nil, err
			}
		}
		start, err := decide(ctx, tx, l)
		if err != nil || start.kind == "" {
			return nil, err
		}
		run, err := startRun(ctx, tx, l, start.kind, start.steps, who)
		if err != nil {
			return nil, err
		}
		if start.then != nil {
			if err := start.then(ctx, tx, run); err != nil {
				return nil, err
			}
		}
		return &run, nil
	})
}

// notBusy answers 409 naming the stack's run in progress, if any.
func notBusy(ctx context.Context, q store.Querier, s horizon.Stack) error {
	return runOwner.NotBusy(ctx, q, store.OfStack(s.ID))
}

// removalPending refuses anything but finishing the removal (retry, remove) or force-remove on
// a stack whose removal failed: what is left of it is half destroyed.
func removalPending(s horizon.Stack) error {
	if s.RemovalFailed() {
		return problem.Conflict("The stack's removal failed: retry it to finish the removal, or force-remove it (admins).")
	}
	return nil
}

// startRun writes a run and its steps (with its Nagios step, withNagios) and moves the stack to
// the state its kind gives.
func startRun(ctx context.Context, tx pgx.Tx, l *loaded, kind horizon.RunKind, steps []horizon.Step, who auth.Principal) (horizon.Run, error) {
	steps, err := withNagios(ctx, tx, l, kind, steps)
	if err != nil {
		return horizon.Run{}, err
	}
	run, _, err := store.RunInsertWithSteps(ctx, tx, horizon.Run{StackID: &l.stack.ID, Kind: kind, ActorID: &who.UserID}, steps)
	if err != nil {
		return run, runOwner.Started(err)
	}
	to := horizon.StackUpdating
	switch {
	case kind == horizon.RunRemove:
		to = horizon.StackRemoving
	case l.stack.DeployedAt == nil || l.stack.State == horizon.StackDraft:
		to = horizon.StackDeploying
	}
	if _, err := store.StackSetState(ctx, tx, horizon.StateChange{StackID: l.stack.ID, RunID: &run.ID, To: to, ActorID: &who.UserID}); err != nil {
		return run, err
	}
	return run, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "stack." + string(kind), ObjectType: "stack",
		ObjectID: &l.stack.ID, TeamID: &l.stack.TeamID, Details: map[string]any{"run_id": run.ID, "steps": len(steps)}})
}

// accepted announces the started run with the stack's new state and answers 202 with the run.
func accepted(c *fiber.Ctx, d api.Deps, run horizon.Run, who auth.Principal) error {
	var evs []events.Event
	if s, err := store.StackGet(c.UserContext(), d.DB, who.Scope(), *run.StackID); err == nil {
		evs = append(evs, events.Event{Type: events.Stack, ID: s.ID, StackID: s.ID, TeamID: s.TeamID, State: string(s.State)},
			events.Event{Type: events.Run, ID: run.ID, StackID: s.ID, TeamID: s.TeamID, RunID: run.ID, State: string(run.State)})
	}
	return runOwner.Accepted(c, d, *run.StackID, run, toRun(run, capabilities(who)), evs...)
}
