package stacks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/runplan"
	"horizon/shared/store"
	"horizon/shared/template"
)

// Deploy starts the deploy run of a draft (or failed) stack after a preflight that reports every
// problem at once (422), and answers 202 with the run. A repeated Idempotency-Key returns the
// run created the first time.
func Deploy(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		// Preflight outside any transaction: it asks Proxmox, which must not hold locks.
		l, err := load(ctx, d.DB, r.Who.Scope(), r.ID, false)
		if err != nil {
			return err
		}
		if err := deployable(ctx, d.DB, l.stack); err != nil {
			return err
		}
		cat, err := loadCatalogue(ctx, d.DB, l.stack.EnvironmentID, l.stack.TeamID, l.stack.ID)
		if err != nil {
			return err
		}
		nagiosProbs, err := askNagios(ctx, d, cat, l.def, l.execs)
		if err != nil {
			return err
		}
		probs, err := deployProblems(ctx, d.DB, l, cat)
		if err != nil {
			return err
		}
		probs = append(probs, nagiosProbs...)
		if err := cat.loadBridges(ctx, d.DB, l.execs); err != nil {
			return err
		}
		views := askClusters(ctx, d.Box, cat, l.execs)
		probs = append(probs, liveProblems(l.def, l.stack.Name, l.execs, cat, views)...)
		if len(probs) > 0 {
			p := problem.Invalid(probs)
			p.Detail = fmt.Sprintf("Preflight found %d problem(s); nothing was started. See errors.", len(probs))
			return p
		}
		run, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Run, error) {
			locked, err := load(ctx, tx, r.Who.Scope(), r.ID, true)
			if err != nil {
				return horizon.Run{}, err
			}
			if locked.stack.Version != l.stack.Version {
				return horizon.Run{}, problem.Conflict("The stack changed while its deploy was being checked; deploy again.")
			}
			if err := deployable(ctx, tx, locked.stack); err != nil {
				return horizon.Run{}, err
			}
			if err := enforceQuota(ctx, tx, locked.stack, cat.env.Name, deployItems(locked)); err != nil {
				return horizon.Run{}, err
			}
			if err := reserve(ctx, tx, d, locked, cat, views); err != nil {
				return horizon.Run{}, err
			}
			return startRun(ctx, tx, locked, horizon.RunDeploy, runplan.Apply(locked.def, locked.execs, runplan.All), r.Who)
		})
		if err != nil {
			return err
		}
		return accepted(c, d, run, r.Who)
	})
}

// deployable refuses a deploy of a stack that is not a draft or failed, or has a run in
// progress.
func deployable(ctx context.Context, q store.Querier, s horizon.Stack) error {
	if err := notBusy(ctx, q, s); err != nil {
		return err
	}
	if s.State != horizon.StackDraft && s.State != horizon.StackFailed {
		return problem.Conflict("The stack is %s: deploy starts drafts and failed stacks; edit or retry it instead.", s.State)
	}
	return removalPending(s)
}

// notBusy answers 409 naming the run in progress, if any.
func notBusy(ctx context.Context, q store.Querier, s horizon.Stack) error {
	run, err := store.RunActive(ctx, q, store.OfStack(s.ID))
	if errors.Is(err, horizon.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return problem.Busy("Run %s (%s) is in progress on this stack; wait for it or cancel it.", run.ID, run.Kind)
}

// reserve gives each machine execution its VM id (unique in its cluster, checked against the
// VMs the cluster has) and its name (unique in its cluster, by a constraint) and attaches its address (exclusive: a constraint), and generates the
// secrets the template asks Horizon to generate.
func reserve(ctx context.Context, tx pgx.Tx, d api.Deps, l *loaded, cat *catalogue, views map[uuid.UUID]*clusterView) error {
	for i := range l.execs {
		e := &l.execs[i]
		job := l.def.Job(e.Job)
		if err := generateSecrets(ctx, tx, d, job, e); err != nil {
			return err
		}
		if !job.Machine {
			continue
		}
		cfg := e.Config
		var inUse []int
		if v := views[*cfg.ProxmoxServerID]; v != nil {
			inUse = v.vmids
		}
		vmid, err := store.VMIDAllocate(ctx, tx, *cfg.ProxmoxServerID, e.ID, inUse)
		if err != nil {
			return err
		}
		name, err := store.ExecutionSetPlacement(ctx, tx, e.ID, *cfg.ProxmoxServerID, cfg.Node, vmid, horizon.VMName(l.stack.Name, e.Job, e.Index))
		var taken *store.VMNameTakenError
		if errors.As(err, &taken) {
			return horizon.Invalid(execField(e.Job, e.Index, ""), "%s", taken.Error())
		}
		if err != nil {
			return err
		}
		e.VMID, e.VMName = &vmid, &name
		a, err := store.AddressByID(ctx, tx, *cfg.AddressID)
		if err != nil {
			return err
		}
		if a.ExecutionID != nil && *a.ExecutionID == e.ID {
			continue
		}
		if err := store.AddressAttach(ctx, tx, a.ID, e.ID); errors.Is(err, horizon.ErrConflict) {
			return horizon.Invalid(execField(e.Job, e.Index, "address_id"), "was just attached to another machine")
		} else if err != nil {
			return err
		}
	}
	return nil
}

// generateSecrets fills the secret parameters the template generates (generate: true) and the
// user left empty, once: later runs keep them.
func generateSecrets(ctx context.Context, tx pgx.Tx, d api.Deps, job *template.Job, e *horizon.Execution) error {
	values := map[string]string{}
	if len(e.SecretParameters) > 0 {
		b, err := d.Box.Open(horizon.PurposeSecretParameters, e.SecretParameters)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &values); err != nil {
			return fmt.Errorf("decode secret parameters of %s[%d]: %w", e.Job, e.Index, err)
		}
	}
	generated := false
	for _, pm := range job.Parameters {
		if pm.Secret && pm.Generate && values[pm.Name] == "" {
			values[pm.Name] = randomSecret()
			generated = true
		}
	}
	if !generated {
		return nil
	}
	setSecrets(e, values, d.Box)
	return store.ExecutionUpdateConfig(ctx, tx, e.ID, e.Config, e.SecretParameters)
}

// startRun writes a run and its steps (with its Nagios step, withNagios) and moves the stack to
// the state its kind gives.
func startRun(ctx context.Context, tx pgx.Tx, l *loaded, kind horizon.RunKind, steps []horizon.Step, who auth.Principal) (horizon.Run, error) {
	steps, err := withNagios(ctx, tx, l, kind, steps)
	if err != nil {
		return horizon.Run{}, err
	}
	run, _, err := store.RunInsertWithSteps(ctx, tx, horizon.Run{StackID: &l.stack.ID, Kind: kind, ActorID: &who.UserID}, steps)
	if errors.Is(err, store.ErrRunInProgress) {
		return run, problem.Busy("Another run started on this stack a moment ago; wait for it or cancel it.")
	}
	if err != nil {
		return run, err
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

// accepted enqueues the run's first advance (after the commit; a lost enqueue is found by the
// reconciler) and answers 202 with the run.
func accepted(c *fiber.Ctx, d api.Deps, run horizon.Run, who auth.Principal) error {
	var evs []events.Event
	if s, err := store.StackGet(c.UserContext(), d.DB, who.Scope(), *run.StackID); err == nil {
		evs = append(evs, events.Event{Type: events.Stack, ID: s.ID, StackID: s.ID, TeamID: s.TeamID, State: string(s.State)},
			events.Event{Type: events.Run, ID: run.ID, StackID: s.ID, TeamID: s.TeamID, RunID: run.ID, State: string(run.State)})
	}
	d.Announce().Changed(c.UserContext(), run.ID, evs...)
	c.Set(fiber.HeaderLocation, "/v1/stacks/"+run.StackID.String()+"/runs/"+run.ID.String())
	return c.Status(fiber.StatusAccepted).JSON(toRun(run, capabilities(who)))
}

// randomSecret is a generated secret parameter: 24 random bytes, base64url.
func randomSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand does not fail on Linux
	return base64.RawURLEncoding.EncodeToString(b)
}
