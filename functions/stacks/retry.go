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
)

// RetryRequest is the body of POST /v1/stacks/{id}/retry.
type RetryRequest struct {
	// Mode is "failed" (default: rerun what failed, was canceled, held or pending; what
	// succeeded is not touched), "force" (the same, after re-resolving each failed job's branch
	// to its newest commit and pinning it) or "all" (re-apply everything).
	Mode string `json:"mode"`
}

// Retry starts a retry run (202). A stack whose last run was a removal retries the removal.
func Retry(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireWriter(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		req, err := api.DecodeOptional[RetryRequest](c)
		if err != nil {
			return err
		}
		if req.Mode == "" {
			req.Mode = "failed"
		}
		if req.Mode != "failed" && req.Mode != "force" && req.Mode != "all" {
			return horizon.Invalid("mode", "must be failed, force or all")
		}
		who := api.Principal(c)
		ctx := c.UserContext()
		// Re-resolving branches asks git: before the transaction, which must not wait on it.
		var commits map[string]string
		if req.Mode == "force" {
			l, err := load(ctx, d.DB, who.Scope(), id, false)
			if err != nil {
				return err
			}
			if commits, err = resolveFailedJobs(ctx, d, l); err != nil {
				return err
			}
		}
		run, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Run, error) {
			l, err := load(ctx, tx, who.Scope(), id, true)
			if err != nil {
				return horizon.Run{}, err
			}
			if err := notBusy(ctx, tx, l.stack); err != nil {
				return horizon.Run{}, err
			}
			last, err := store.RunLatestChange(ctx, tx, l.stack.ID)
			if errors.Is(err, horizon.ErrNotFound) {
				return horizon.Run{}, problem.Conflict("The stack has never run: deploy it.")
			}
			if err != nil {
				return horizon.Run{}, err
			}
			if req.Mode != "all" && l.stack.State != horizon.StackFailed {
				return horizon.Run{}, problem.Conflict("The stack is %s: only a failed stack has failed jobs to retry (mode all re-applies everything).", l.stack.State)
			}
			if l.stack.State != horizon.StackFailed && l.stack.State != horizon.StackDeployed {
				return horizon.Run{}, problem.Conflict("The stack is %s: nothing to retry.", l.stack.State)
			}
			if last.Kind == horizon.RunRemove {
				steps, err := removalSteps(ctx, tx, l)
				if err != nil {
					return horizon.Run{}, err
				}
				return startRun(ctx, tx, l, horizon.RunRemove, steps, who)
			}
			steps, err := store.StepsOfRun(ctx, tx, last.ID)
			if err != nil {
				return horizon.Run{}, err
			}
			sel := runplan.Select(runplan.All)
			if req.Mode != "all" {
				sel = runplan.RetryFailed(last.ID, steps)
			}
			for job, commit := range commits {
				if err := store.ExecutionsRepin(ctx, tx, l.stack.ID, job, commit); err != nil {
					return horizon.Run{}, err
				}
			}
			if l.execs, err = store.ExecutionsOfStack(ctx, tx, l.stack.ID, false); err != nil {
				return horizon.Run{}, err
			}
			return startRun(ctx, tx, l, horizon.RunRetry, runplan.Apply(l.def, l.execs, sel), who)
		})
		if err != nil {
			return err
		}
		return accepted(c, d, run, who)
	}
}

// resolveFailedJobs re-resolves the branch of every job with a failed, canceled or held step in
// the stack's last run, and returns job → newest commit.
func resolveFailedJobs(ctx context.Context, d api.Deps, l *loaded) (map[string]string, error) {
	last, err := store.RunLatestChange(ctx, d.DB, l.stack.ID)
	if errors.Is(err, horizon.ErrNotFound) {
		return nil, problem.Conflict("The stack has never run: deploy it.")
	}
	if err != nil {
		return nil, err
	}
	steps, err := store.StepsOfRun(ctx, d.DB, last.ID)
	if err != nil {
		return nil, err
	}
	commits := map[string]string{}
	for _, s := range steps {
		if s.State == horizon.StepSucceeded || s.State == horizon.StepSkipped || commits[s.Job] != "" {
			continue
		}
		job := l.def.Job(s.Job)
		if job == nil {
			continue
		}
		creds, err := gitcred.For(ctx, d.DB, d.Box, []string{job.Source.Repo})
		if err != nil {
			return nil, err
		}
		commit, err := d.Git.Resolve(ctx, job.Source.Repo, job.Source.Branch, creds[job.Source.Repo])
		switch {
		case errors.Is(err, gitsource.ErrUnreachable):
			return nil, problem.Unavailable(err, "The git server of job %s (%s) does not answer; retry shortly.", job.Name, job.Source.Repo)
		case errors.Is(err, gitsource.ErrBranchNotFound), errors.Is(err, gitsource.ErrRepoNotFound), errors.Is(err, gitsource.ErrAuth),
			errors.Is(err, gitsource.ErrHostKey):
			return nil, horizon.Invalid("mode", "job %s: branch %s of %s cannot be resolved: %v", job.Name, job.Source.Branch, job.Source.Repo, err)
		case err != nil:
			return nil, err
		}
		commits[job.Name] = commit
	}
	return commits, nil
}
