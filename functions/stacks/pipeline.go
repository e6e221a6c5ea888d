package stacks

import (
	"context"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/queue"
	"horizon/shared/store"
)

// Pipeline is a run shown as it ran: one column per phase, one card per execution.
type Pipeline struct {
	Run     Run      `json:"run"`
	Columns []Column `json:"columns"`
}

// Column is one phase of a run.
type Column struct {
	Phase int    `json:"phase"`
	Name  string `json:"name"`
	Cards []Card `json:"cards"`
}

// Card is one step.
type Card struct {
	StepID     uuid.UUID  `json:"step_id"`
	Job        string     `json:"job"`
	Execution  *int       `json:"execution"`
	Kind       string     `json:"kind"`
	State      string     `json:"state"`
	Attempt    int        `json:"attempt"`
	Node       *string    `json:"node"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// GateWaitMS is the time spent waiting for the node's build gate; WorkMS the rest.
	GateWaitMS int64 `json:"gate_wait_ms"`
	WorkMS     int64 `json:"work_ms"`
	// Error is the first line of the error of a failed step; Reason why it was skipped.
	Error          *string    `json:"error"`
	Reason         *string    `json:"reason"`
	WaitingOn      *WaitingOn `json:"waiting_on"`
	AllowedActions []string   `json:"allowed_actions"`
}

// WaitingOn says what a queued machine step is waiting for: its node's build gate.
type WaitingOn struct {
	Node     string  `json:"node"`
	Holder   *Holder `json:"holder"`
	Position int     `json:"position"`
	Since    *string `json:"since"`
}

// Holder is the step that holds a node's build gate. Its ids are shown only when the caller
// may see its stack; otherwise they are null (another team's stack is building there).
type Holder struct {
	StackID *uuid.UUID `json:"stack"`
	RunID   *uuid.UUID `json:"run"`
	StepID  *uuid.UUID `json:"step"`
}

// GetPipeline returns the pipeline of the stack's latest run that is not an action, or of ?run=.
func GetPipeline(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		runID, err := api.QueryID(c, "run")
		if err != nil {
			return err
		}
		return servePipeline(ctx, c, d, r, runID)
	})
}

// GetRun returns one run of the stack with its steps, as the pipeline shows them: where the
// Location of every 202 that starts a run points.
func GetRun(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		return servePipeline(ctx, c, d, r, &r.Sub)
	})
}

// servePipeline answers the pipeline of the run (nil: the latest) of the stack r.ID. A run of
// another stack is not found, like a stack of another team.
func servePipeline(ctx context.Context, c *fiber.Ctx, d api.Deps, r api.Req[api.None], runID *uuid.UUID) error {
	who := r.Who
	s, err := store.StackGet(ctx, d.DB, who.Scope(), r.ID)
	if err != nil {
		return err
	}
	var run horizon.Run
	if runID != nil {
		run, err = store.RunGet(ctx, d.DB, *runID)
		if err == nil && (run.StackID == nil || *run.StackID != s.ID) {
			err = fmt.Errorf("run %s of stack %s: %w", *runID, s.ID, horizon.ErrNotFound)
		}
	} else {
		// The stack's pipeline is its latest run that changes it: an action run since (a
		// script on one machine, a terraform action's instance) is shown by its own ?run= and
		// in the actions' history, and does not hide the jobs' cards and their Run again.
		run, err = store.RunLatestChange(ctx, d.DB, s.ID)
	}
	if err != nil {
		return err
	}
	p, err := pipeline(ctx, d, s, run, who)
	if err != nil {
		return err
	}
	return c.JSON(p)
}

func pipeline(ctx context.Context, d api.Deps, s horizon.Stack, run horizon.Run, who auth.Principal) (Pipeline, error) {
	steps, err := store.StepsOfRun(ctx, d.DB, run.ID)
	if err != nil {
		return Pipeline{}, err
	}
	can := capabilities(who)
	r, err := withAction(ctx, d, toRun(run, can))
	if err != nil {
		return Pipeline{}, err
	}
	// An older run's cards may be of machines removed since: nothing is offered on those.
	execs, err := store.ExecutionsOfStack(ctx, d.DB, s.ID, false)
	if err != nil {
		return Pipeline{}, err
	}
	live := make(map[uuid.UUID]bool, len(execs))
	for _, e := range execs {
		live[e.ID] = true
	}
	out := Pipeline{Run: r, Columns: []Column{}}
	inProgress := !run.State.Terminal()
	for _, st := range steps {
		if len(out.Columns) == 0 || out.Columns[len(out.Columns)-1].Phase != st.Phase {
			out.Columns = append(out.Columns, Column{Phase: st.Phase, Name: st.PhaseName, Cards: []Card{}})
		}
		card := Card{StepID: st.ID, Job: st.Job, Execution: st.ExecutionIndex, Kind: string(st.Kind), State: string(st.State),
			Attempt: st.Attempt, Node: st.Node, StartedAt: st.StartedAt, FinishedAt: st.FinishedAt, GateWaitMS: st.GateWaitMS,
			Error: st.Error, Reason: st.Reason, AllowedActions: horizon.StepActions(s.State, inProgress, st, can)}
		if st.ExecutionID != nil && !live[*st.ExecutionID] {
			card.AllowedActions = []string{}
		}
		if st.StartedAt != nil {
			end := time.Now()
			if st.FinishedAt != nil {
				end = *st.FinishedAt
			}
			card.WorkMS = end.Sub(*st.StartedAt).Milliseconds()
		}
		if st.State == horizon.StepQueued && st.Node != nil && st.ServerID != nil {
			card.WaitingOn = waitingOn(ctx, d, st, who)
		}
		col := &out.Columns[len(out.Columns)-1]
		col.Cards = append(col.Cards, card)
	}
	return out, nil
}

// waitingOn reads the node's gate: who holds it and where the step stands in line. A gate that
// cannot be read leaves the card without it rather than failing the pipeline.
func waitingOn(ctx context.Context, d api.Deps, st horizon.Step, who auth.Principal) *WaitingOn {
	status, err := d.Gate.Status(ctx, queue.GateNode(*st.ServerID, *st.Node))
	if err != nil {
		return nil
	}
	w := &WaitingOn{Node: *st.Node}
	me := queue.StepTaskID(st.ID, st.Attempt)
	for i, waiter := range status.Waiters {
		if waiter.Owner == me {
			w.Position = i + 1
			since := waiter.ReadyAt.UTC().Format(time.RFC3339Nano)
			w.Since = &since
		}
	}
	holderStep, _, ok := queue.ParseStepTaskID(status.Holder)
	if !ok {
		return w
	}
	w.Holder = &Holder{}
	hs, err := store.StepGet(ctx, d.DB, holderStep)
	if err != nil {
		return w
	}
	r, err := store.RunGet(ctx, d.DB, hs.RunID)
	if err != nil || r.StackID == nil {
		return w
	}
	if _, err := store.StackGet(ctx, d.DB, who.Scope(), *r.StackID); err == nil {
		w.Holder = &Holder{StackID: r.StackID, RunID: &hs.RunID, StepID: &hs.ID}
	}
	return w
}
