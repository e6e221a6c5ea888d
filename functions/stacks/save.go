package stacks

import (
	"context"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/queue"
	"horizon/shared/runplan"
	"horizon/shared/store"
)

// saveEdit saves an edit of a deployed or failed stack (or, with upgradeTo, an upgrade): the
// plan, checked like a deploy's preflight, applied as one run (202). An edit that changes no
// execution needs no run and answers 200 with the stack.
func saveEdit(c *fiber.Ctx, d api.Deps, l *loaded, req UpdateRequest, ifVersion int64, upgradeTo *int) error {
	ctx := c.UserContext()
	who := api.Principal(c)
	if l.stack.Version != ifVersion {
		return horizon.ErrStale
	}
	if err := notBusy(ctx, d.DB, l.stack); err != nil {
		return err
	}
	if err := removalPending(l.stack); err != nil {
		return err
	}
	if err := editable(l.stack, req); err != nil {
		return err
	}
	if err := checkFields(l.stack, req); err != nil {
		return err
	}
	ed, err := planEdit(ctx, d.DB, d, who, l, req, upgradeTo)
	if err != nil {
		return err
	}
	if len(ed.changes) > 0 && !req.Confirm {
		return horizon.Invalid("confirm", "must be true to save an edit that runs Terraform; POST /v1/stacks/%s/plan shows what it does", l.stack.ID)
	}
	probs := ed.problems
	var created []horizon.Execution
	for _, ch := range ed.changes {
		if ch.Action == runplan.ActionCreate {
			created = append(created, ch.Execution)
		}
	}
	if err := ed.cat.loadBridges(ctx, d.DB, ed.result()); err != nil {
		return err
	}
	views, err := askClusters(ctx, d.Box, ed.cat, ed.result())
	if err != nil {
		return err
	}
	probs = append(probs, liveProblems(ed.def, ed.name, created, ed.cat, views)...)
	if len(probs) > 0 {
		p := problem.Invalid(probs)
		p.Detail = fmt.Sprintf("The edit has %d problem(s); nothing was changed. See errors.", len(probs))
		return p
	}
	run, err := startOn(ctx, d, who, l.stack.ID, refusesRemoval, func(ctx context.Context, tx pgx.Tx, locked *loaded) (launch, error) {
		if locked.stack.Version != l.stack.Version {
			return launch{}, horizon.ErrStale
		}
		if err := enforceQuota(ctx, tx, locked.stack, ed.cat.env.Name, editItems(ed)); err != nil {
			return launch{}, err
		}
		if _, err := store.StackUpdate(ctx, tx, l.stack.ID, store.StackPatch{Name: req.Name.Ptr(), Description: req.Description.Ptr(),
			Labels: req.Labels.Ptr(), TemplateVersion: upgradeTo}, l.stack.Version); err != nil {
			return launch{}, err
		}
		if len(ed.changes) == 0 {
			return launch{}, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "stack.update", ObjectType: "stack",
				ObjectID: &l.stack.ID, TeamID: &l.stack.TeamID})
		}
		if err := applyChanges(ctx, tx, d, ed, views); err != nil {
			return launch{}, err
		}
		kind := horizon.RunReapply
		if upgradeTo != nil {
			kind = horizon.RunUpgrade
		}
		return launch{kind: kind, steps: runplan.Steps(ed.def, ed.changes, locked.execs)}, nil
	})
	if err != nil {
		return err
	}
	if req.Labels.Given() {
		if err := d.Queue.Enqueue(ctx, queue.NewStackTags(d.Queues, l.stack.ID)); err != nil {
			d.Log.WarnContext(ctx, "enqueue tag update", "stack_id", l.stack.ID, "error", err)
		}
	}
	if run != nil {
		return accepted(c, d, *run, who)
	}
	out, err := view(ctx, d.DB, who.Scope(), l.stack.ID, capabilities(who))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, api.ETag(out.Version))
	return c.JSON(out)
}

func stackName(l *loaded, req UpdateRequest) string {
	name := l.stack.Name
	req.Name.Apply(&name)
	return name
}

// applyChanges writes an edit's execution changes: new executions (with VM ids and addresses),
// new answers of re-applied ones, removals marked; on an upgrade, every kept execution is
// pinned to the new version's commit.
func applyChanges(ctx context.Context, tx pgx.Tx, d api.Deps, ed *edit, views map[uuid.UUID]*clusterView) error {
	for i := range ed.changes {
		ch := &ed.changes[i]
		switch ch.Action {
		case runplan.ActionCreate:
			e := ch.Execution
			e.StackID, e.Commit = ed.l.stack.ID, ed.commits[e.Job]
			saved, err := store.ExecutionInsert(ctx, tx, e)
			if err != nil {
				return err
			}
			ch.Execution = saved
		case runplan.ActionReapply:
			e := ch.Execution
			if err := store.ExecutionUpdateConfig(ctx, tx, e.ID, e.Config, e.SecretParameters); err != nil {
				return err
			}
			// The attachment is made again below: the address may be another one now.
			if err := store.AddressDetach(ctx, tx, e.ID); err != nil {
				return err
			}
		case runplan.ActionDestroy:
			if err := store.ExecutionSetState(ctx, tx, ch.Execution.ID, horizon.ExecutionRemoving); err != nil {
				return err
			}
		}
	}
	if ed.version != ed.l.stack.TemplateVersion {
		for job, commit := range ed.commits {
			if err := store.ExecutionsRepin(ctx, tx, ed.l.stack.ID, job, commit); err != nil {
				return err
			}
		}
	}
	// VM ids, placements and addresses of what is built or re-applied, as a deploy does.
	l := &loaded{stack: ed.l.stack, def: ed.def}
	l.stack.Name = ed.name
	for _, ch := range ed.changes {
		if ch.Action == runplan.ActionCreate || ch.Action == runplan.ActionReapply {
			l.execs = append(l.execs, ch.Execution)
		}
	}
	return reserve(ctx, tx, d, l, ed.cat, views)
}
