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
		views, err := askClusters(ctx, d.Box, cat, l.execs)
		if err != nil {
			return err
		}
		probs = append(probs, liveProblems(l.def, l.stack.Name, l.execs, cat, views)...)
		if len(probs) > 0 {
			p := problem.Invalid(probs)
			p.Detail = fmt.Sprintf("Preflight found %d problem(s); nothing was started. See errors.", len(probs))
			return p
		}
		return startRunOn(c, d, r.Who, r.ID, refusesRemoval, func(ctx context.Context, tx pgx.Tx, locked *loaded) (launch, error) {
			if locked.stack.Version != l.stack.Version {
				return launch{}, problem.Conflict("The stack changed while its deploy was being checked; deploy again.")
			}
			if err := deployState(locked.stack); err != nil {
				return launch{}, err
			}
			if err := enforceQuota(ctx, tx, locked.stack, cat.env.Name, deployItems(locked)); err != nil {
				return launch{}, err
			}
			if err := reserve(ctx, tx, d, locked, cat, views); err != nil {
				return launch{}, err
			}
			return launch{kind: horizon.RunDeploy, steps: runplan.Apply(locked.def, locked.execs, runplan.All)}, nil
		})
	})
}

// deployable refuses a deploy of a stack that is not a draft or failed, whose removal failed, or
// has a run in progress.
func deployable(ctx context.Context, q store.Querier, s horizon.Stack) error {
	if err := notBusy(ctx, q, s); err != nil {
		return err
	}
	if err := deployState(s); err != nil {
		return err
	}
	return removalPending(s)
}

// deployState refuses a deploy of a stack that is not a draft or failed.
func deployState(s horizon.Stack) error {
	if s.State != horizon.StackDraft && s.State != horizon.StackFailed {
		return problem.Conflict("The stack is %s: deploy starts drafts and failed stacks; edit or retry it instead.", s.State)
	}
	return nil
}

// reserve gives each machine execution its VM id (unique in its cluster, checked against the
// VMs the cluster has) and its name (unique in its cluster, by a constraint) and attaches its address (exclusive: a constraint), and generates the
// secrets the template asks Horizon to generate.
func reserve(ctx context.Context, tx pgx.Tx, d api.Deps, l *loaded, cat *catalogue, views map[uuid.UUID]*clusterView) error {
	var servers []uuid.UUID
	for _, e := range l.execs {
		if e.Config.ProxmoxServerID != nil && l.def.Job(e.Job).Machine {
			servers = append(servers, *e.Config.ProxmoxServerID)
		}
	}
	if err := store.VMIDLock(ctx, tx, servers...); err != nil {
		return err
	}
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

// randomSecret is a generated secret parameter: 24 random bytes, base64url.
func randomSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand does not fail on Linux
	return base64.RawURLEncoding.EncodeToString(b)
}
