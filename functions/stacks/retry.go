package stacks

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/gitcred"
	"horizon/shared/gitsource"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/runplan"
	"horizon/shared/store"
	"horizon/shared/template"
)

// RetryRequest is the body of POST /v1/stacks/{id}/retry.
type RetryRequest struct {
	api.Optional // the body may be left out
	// Mode is "failed" (default: rerun what failed, was canceled, held or pending; what
	// succeeded is not touched), "force" (the same, after re-resolving each failed job's branch,
	// and each terraform action's, to its newest commit and pinning it) or "all" (re-apply
	// everything).
	Mode string `json:"mode"`
}

// Retry starts a retry run (202). A stack whose last run was a removal retries the removal.
func Retry(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[RetryRequest]) error {
		if r.Body.Mode == "" {
			r.Body.Mode = "failed"
		}
		if r.Body.Mode != "failed" && r.Body.Mode != "force" && r.Body.Mode != "all" {
			return horizon.Invalid("mode", "must be failed, force or all")
		}
		// Re-resolving branches asks git: before the transaction, which must not wait on it.
		var pins forcePins
		if r.Body.Mode == "force" {
			l, err := load(ctx, d.DB, r.Who.Scope(), r.ID, false)
			if err != nil {
				return err
			}
			if pins, err = resolveForce(ctx, d, l); err != nil {
				return err
			}
		}
		return startRunOn(c, d, r.Who, r.ID, finishesRemoval, func(ctx context.Context, tx pgx.Tx, l *loaded) (launch, error) {
			last, err := store.RunLatestChange(ctx, tx, l.stack.ID)
			if errors.Is(err, horizon.ErrNotFound) {
				return launch{}, problem.Conflict("The stack has never run: deploy it.")
			}
			if err != nil {
				return launch{}, err
			}
			if r.Body.Mode != "all" && l.stack.State != horizon.StackFailed {
				return launch{}, problem.Conflict("The stack is %s: only a failed stack has failed jobs to retry (mode all re-applies everything).", l.stack.State)
			}
			if l.stack.State != horizon.StackFailed && l.stack.State != horizon.StackDeployed {
				return launch{}, problem.Conflict("The stack is %s: nothing to retry.", l.stack.State)
			}
			if last.Kind == horizon.RunRemove {
				steps, err := removalSteps(ctx, tx, l)
				return launch{kind: horizon.RunRemove, steps: steps}, err
			}
			steps, err := store.StepsOfRun(ctx, tx, last.ID)
			if err != nil {
				return launch{}, err
			}
			sel := runplan.Select(runplan.All)
			if r.Body.Mode != "all" {
				sel = runplan.RetryFailed(last.ID, steps)
			}
			for job, commit := range pins.jobs {
				if err := store.ExecutionsRepin(ctx, tx, l.stack.ID, job, commit); err != nil {
					return launch{}, err
				}
			}
			for action, commit := range pins.actions {
				if err := store.StackRepinAction(ctx, tx, l.stack.ID, action, commit); err != nil {
					return launch{}, err
				}
			}
			if l.execs, err = store.ExecutionsOfStack(ctx, tx, l.stack.ID, false); err != nil {
				return launch{}, err
			}
			return launch{kind: horizon.RunRetry, steps: runplan.Apply(l.def, l.execs, sel)}, nil
		})
	})
}

// forcePins are what a force retry re-pins: job → and terraform action → the newest commit of
// its branch.
type forcePins struct {
	jobs, actions map[string]string
}

// resolveForce re-resolves the branch of every job with a failed, canceled or held step in the
// stack's last run, and of every terraform action of its template (an action is no step of
// that run: its next runs take the new commit; its instances keep the commit that made them).
func resolveForce(ctx context.Context, d api.Deps, l *loaded) (forcePins, error) {
	pins := forcePins{jobs: map[string]string{}, actions: map[string]string{}}
	last, err := store.RunLatestChange(ctx, d.DB, l.stack.ID)
	if errors.Is(err, horizon.ErrNotFound) {
		return pins, problem.Conflict("The stack has never run: deploy it.")
	}
	if err != nil {
		return pins, err
	}
	steps, err := store.StepsOfRun(ctx, d.DB, last.ID)
	if err != nil {
		return pins, err
	}
	for _, s := range steps {
		if s.State == horizon.StepSucceeded || s.State == horizon.StepSkipped || pins.jobs[s.Job] != "" {
			continue
		}
		job := l.def.Job(s.Job)
		if job == nil {
			continue
		}
		if pins.jobs[job.Name], err = resolveBranch(ctx, d, "job "+job.Name, job.Source); err != nil {
			return pins, err
		}
	}
	for _, a := range l.def.Actions {
		if a.Kind != template.ActionTerraform || a.Source == nil {
			continue
		}
		if pins.actions[a.Name], err = resolveBranch(ctx, d, "action "+a.Name, *a.Source); err != nil {
			return pins, err
		}
	}
	return pins, nil
}

// resolveBranch asks git for the newest commit of a source's branch; what names the job or
// action it is the source of.
func resolveBranch(ctx context.Context, d api.Deps, what string, src template.Source) (string, error) {
	creds, err := gitcred.For(ctx, d.DB, d.Box, []string{src.Repo})
	if err != nil {
		return "", err
	}
	commit, err := d.Git.Resolve(ctx, src.Repo, src.Branch, creds[src.Repo])
	switch {
	case errors.Is(err, gitsource.ErrUnreachable):
		return "", problem.Unavailable(err, "The git server of %s (%s) does not answer; retry shortly.", what, src.Repo)
	case errors.Is(err, gitsource.ErrBranchNotFound), errors.Is(err, gitsource.ErrRepoNotFound), errors.Is(err, gitsource.ErrAuth),
		errors.Is(err, gitsource.ErrHostKey):
		return "", horizon.Invalid("mode", "%s: branch %s of %s cannot be resolved: %v", what, src.Branch, src.Repo, err)
	case err != nil:
		return "", err
	}
	return commit, nil
}
