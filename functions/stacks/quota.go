package stacks

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/quota"
	"horizon/shared/runplan"
	"horizon/shared/store"
	"horizon/shared/template"
)

// counted reports whether a stack's executions count against its team's quotas now: from its
// first deploy until it is removed (quota's package doc).
func counted(s horizon.Stack) bool {
	return s.State != horizon.StackDraft && s.State != horizon.StackRemoved
}

// costOf is what an execution of job (of def) with these answers counts; a job def does not
// have counts nothing.
func costOf(def *template.Definition, job string, params map[string]any) horizon.Resources {
	j := def.Job(job)
	if j == nil {
		return horizon.Resources{}
	}
	return j.Cost(params)
}

// costField names the field that sets an execution's amount in dimension dim: the parameter a
// resource reads, else the execution itself (a machine, a constant).
func costField(def *template.Definition, job string, index int) func(horizon.Dimension) string {
	return func(dim horizon.Dimension) string {
		if j := def.Job(job); j != nil && dim != horizon.DimMachines {
			if p := j.CostParameter(dim); p != "" {
				return execField(job, index, "parameters."+p)
			}
		}
		return execField(job, index, "")
	}
}

// deployItems is a deploy of l as a quota sees it: every execution counts after it, and
// before it only when the stack already counts (a failed stack deployed again grows nothing).
func deployItems(l *loaded) []quota.Item {
	items := make([]quota.Item, 0, len(l.execs))
	for _, e := range l.execs {
		it := quota.Item{After: costOf(l.def, e.Job, e.Config.Parameters), Field: costField(l.def, e.Job, e.Index)}
		if counted(l.stack) {
			it.Before = it.After
		}
		items = append(items, it)
	}
	return items
}

// editItems is a saved edit (or upgrade) as a quota sees it. Every execution the stack has
// keeps counting — one the edit destroys until its destroy ends —, at its new answers and
// under the version the stack moves to; the executions the edit creates count from the save.
func editItems(ed *edit) []quota.Item {
	newConfig := map[uuid.UUID]horizon.ExecutionConfig{}
	var items []quota.Item
	for _, ch := range ed.changes {
		switch {
		case ch.Action == runplan.ActionCreate:
			items = append(items, quota.Item{After: costOf(ed.def, ch.Job, ch.Execution.Config.Parameters), Field: costField(ed.def, ch.Job, ch.Index)})
		case ch.Action == runplan.ActionReapply && ch.Execution.ID != uuid.Nil:
			newConfig[ch.Execution.ID] = ch.Execution.Config
		}
	}
	for _, e := range ed.l.execs {
		cfg, changed := newConfig[e.ID]
		if !changed {
			cfg = e.Config
		}
		it := quota.Item{After: costOf(ed.def, e.Job, cfg.Parameters), Field: costField(ed.def, e.Job, e.Index)}
		if counted(ed.l.stack) {
			it.Before = costOf(ed.l.def, e.Job, e.Config.Parameters)
		}
		items = append(items, it)
	}
	return items
}

// quotaProblems checks a change of a stack against its team's quota, outside any transaction:
// for the preflight, the plan and a draft's problems, which report it with the rest. The quota
// and what the team's other stacks use came with the catalogue's environment (one statement,
// no round trip of its own); the transaction that starts the run checks again under the
// quota's lock (enforceQuota).
func quotaProblems(cat *catalogue, items []quota.Item) []horizon.FieldError {
	qe := cat.quota
	if qe.Quota.Unlimited() || !grows(quota.Delta(items)) {
		return nil
	}
	others := quota.Usage{Total: qe.Used, Environments: map[uuid.UUID]horizon.Resources{cat.env.ID: qe.UsedInEnvironment}}
	return quota.Check(qe.Quota, others, cat.env.ID, cat.env.Name, items)
}

// enforceQuota checks a change of stack s in the transaction that writes its run, holding
// the team's quota row, so that a concurrent request of the same team counts after this one
// commits: of two racing for the last of a quota, exactly one passes. 422 naming the field.
func enforceQuota(ctx context.Context, tx pgx.Tx, s horizon.Stack, envName string, items []quota.Item) error {
	qt, err := store.QuotaLock(ctx, tx, s.TeamID)
	if err != nil {
		return err
	}
	probs, err := checkQuota(ctx, tx, qt, s, envName, items)
	if err != nil || len(probs) == 0 {
		return err
	}
	p := problem.Invalid(probs)
	p.Detail = "The team's quota does not leave room for this; nothing was started. See errors."
	return p
}

func checkQuota(ctx context.Context, q store.Querier, qt horizon.Quota, s horizon.Stack, envName string, items []quota.Item) ([]horizon.FieldError, error) {
	// Nothing to exceed, or nothing grows: no need to count (a team without quotas pays nothing).
	if qt.Unlimited() || !grows(quota.Delta(items)) {
		return nil, nil
	}
	others, err := quota.Count(ctx, q, s.TeamID, s.ID)
	if err != nil {
		return nil, err
	}
	return quota.Check(qt, others, s.EnvironmentID, envName, items), nil
}

func grows(d horizon.Resources) bool {
	return d.Machines > 0 || d.VCPUs > 0 || d.MemoryMiB > 0 || d.DiskGiB > 0
}

// deployProblems lists what keeps l from being deployed: its problems, and what its deploy
// would take beyond the team's quota (a draft shows it before anyone presses deploy).
func deployProblems(ctx context.Context, q store.Querier, l *loaded, cat *catalogue) ([]horizon.FieldError, error) {
	probs, err := problems(ctx, q, l.def, l.execs, cat)
	if err != nil {
		return nil, err
	}
	return append(probs, quotaProblems(cat, deployItems(l))...), nil
}
