package api

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Run is a run as the routes of every owner show it.
type Run struct {
	ID      uuid.UUID  `json:"id"`
	StackID *uuid.UUID `json:"stack_id"`
	ISOID   *uuid.UUID `json:"iso_id,omitempty"`
	Kind    string     `json:"kind"`
	State   string     `json:"state"`
	ActorID *uuid.UUID `json:"actor_id"`
	// ActorName is the starter's name where a list of runs names it (a stack's runs), so that
	// a reader needs no access to the users list; absent elsewhere.
	ActorName      *string    `json:"actor_name,omitempty"`
	Error          *string    `json:"error"`
	AllowedActions []string   `json:"allowed_actions"`
	CreatedAt      time.Time  `json:"created_at"`
	StartedAt      *time.Time `json:"started_at"`
	FinishedAt     *time.Time `json:"finished_at"`
	// Action is what a run of kind action ran, with what and what it produced.
	Action *ActionRun `json:"action,omitempty"`
}

// ActionRun is an action run's record: the action, the machine it ran on, the answers it was
// given and the outputs it emitted; a secret one shows as {"secret": true}.
type ActionRun struct {
	Name       string         `json:"name"`
	Job        *string        `json:"job"`
	Execution  *int           `json:"execution"`
	Parameters map[string]any `json:"parameters"`
	Inputs     map[string]any `json:"inputs"`
	Outputs    map[string]any `json:"outputs"`
	// Instance is the terraform action instance the run made or, Undo, undid.
	Instance *uuid.UUID `json:"instance"`
	Undo     bool       `json:"undo"`
}

// NewRun is r as the API shows it, with the actions its reader may take on it.
func NewRun(r horizon.Run, allowed []string) Run {
	return Run{ID: r.ID, StackID: r.StackID, ISOID: r.ISOID, Kind: string(r.Kind), State: string(r.State), ActorID: r.ActorID,
		Error: r.Error, AllowedActions: allowed, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
}

// RunOwner is what the routes of a run's owner — a stack, an ISO — need to know of it; the
// run's life is the same for every owner.
type RunOwner struct {
	// Noun names the owner in the activity log: "stack", "iso".
	Noun string
	// Name names the owner in messages: "stack", "ISO".
	Name string
	// Lock reads the owner id for update in tx, in the principal's scope.
	Lock func(ctx context.Context, tx pgx.Tx, who auth.Principal, id uuid.UUID) (OwnerRef, error)
	// Location is where the run is read after it changed.
	Location func(owner, run uuid.UUID) string
	// Actions are the actions the principal may take on one of the owner's runs.
	Actions func(run horizon.Run, who auth.Principal) []string
}

// OwnerRef is one locked owner: whose runs the store reads, and whose events they are
// (StackID and TeamID for a stack, ISOID for an ISO; catalogue objects have no team).
type OwnerRef struct {
	Runs                   store.RunOwner
	ID                     uuid.UUID
	StackID, TeamID, ISOID uuid.UUID
}

// Event is a change of the owner's run, as followers see it.
func (o OwnerRef) Event(run horizon.Run) events.Event {
	return events.Event{Type: events.Run, ID: run.ID, StackID: o.StackID, TeamID: o.TeamID, ISOID: o.ISOID, RunID: run.ID,
		State: string(run.State)}
}

// NotBusy answers 409 naming the owner's run in progress, if any: an owner runs one run at a
// time.
func (o RunOwner) NotBusy(ctx context.Context, q store.Querier, runs store.RunOwner) error {
	run, err := store.RunActive(ctx, q, runs)
	if errors.Is(err, horizon.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return problem.Busy("Run %s (%s) is in progress on this %s; wait for it or cancel it.", run.ID, run.Kind, o.Name)
}

// Started is the error of a run's insertion that lost the race to another run of the owner
// (store.ErrRunInProgress) as the 409 a client sees; other errors are returned as they are.
func (o RunOwner) Started(err error) error {
	if errors.Is(err, store.ErrRunInProgress) {
		return problem.Busy("Another run of this %s started a moment ago; wait for it or cancel it.", o.Name)
	}
	return err
}

// Accepted answers a run's start, after its transaction committed: it announces the run and
// what changed with it (evs; the announcement enqueues the run's first advance, and a lost one
// is found by the reconciler) and answers 202 with body, its Location the run.
func (o RunOwner) Accepted(c *fiber.Ctx, d Deps, owner uuid.UUID, run horizon.Run, body any, evs ...events.Event) error {
	d.Announce().Changed(c.UserContext(), run.ID, evs...)
	c.Set(fiber.HeaderLocation, o.Location(owner, run.ID))
	return c.Status(fiber.StatusAccepted).JSON(body)
}

// CancelRun is the handler of POST …/{id}/cancel: it interrupts the owner's run in progress.
// The run becomes canceling (a second cancel changes nothing), the worker running a step stops
// it (nothing is rolled back), the steps not started are canceled, and the run ends canceled.
// Answers 202 with the run; 409 when no run is in progress.
func CancelRun(d Deps, o RunOwner) fiber.Handler {
	return Handle(func(ctx context.Context, c *fiber.Ctx, r Req[None]) error {
		id, who := r.ID, r.Who
		var ref OwnerRef
		run, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Run, error) {
			var err error
			if ref, err = o.Lock(ctx, tx, who, id); err != nil {
				return horizon.Run{}, err
			}
			active, err := store.RunActive(ctx, tx, ref.Runs)
			if errors.Is(err, horizon.ErrNotFound) {
				return horizon.Run{}, problem.Conflict("No run is in progress on this %s: there is nothing to cancel.", o.Name)
			}
			if err != nil {
				return horizon.Run{}, err
			}
			if active, err = store.RunGetForUpdate(ctx, tx, active.ID); err != nil {
				return horizon.Run{}, err
			}
			if active.State != horizon.RunCanceling {
				if active, err = store.RunSetState(ctx, tx, active.ID, horizon.RunCanceling, nil); err != nil {
					return horizon.Run{}, err
				}
			}
			var team *uuid.UUID
			if ref.TeamID != uuid.Nil {
				team = &ref.TeamID
			}
			return active, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: o.Noun + ".cancel", ObjectType: o.Noun,
				ObjectID: &ref.ID, TeamID: team, Details: map[string]any{"run_id": active.ID}})
		})
		if err != nil {
			return err
		}
		d.Announce().Canceling(ctx, run.ID, ref.Event(run))
		c.Set(fiber.HeaderLocation, o.Location(id, run.ID))
		return c.Status(fiber.StatusAccepted).JSON(NewRun(run, o.Actions(run, who)))
	})
}
