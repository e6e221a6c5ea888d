package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"horizon/shared/queue"
	"horizon/shared/store"
	"horizon/shared/template"
	"horizon/shared/terraform"
)

// Warm prepares this host for a template version the API has just published: each job's module
// checked out at its pinned commit and initialised (a seed), which is what a build step does
// before it claims its node (seed). Done when the version is published rather than at its first
// deploy, a new version's first builds wait for neither the checkout nor terraform init, and a
// host that has never built the version is as ready as one that has.
//
// It is an optimisation only: a job it cannot prepare is prepared by its first step again, which
// reports the failure in the step's log; the error returned here is for the workers' log.
func (h *Handler) Warm(ctx context.Context, p queue.Published) error {
	tv, err := store.TemplateVersionGet(ctx, h.DB, p.TemplateID, p.Version)
	if err != nil {
		return fmt.Errorf("template %s version %d: %w", p.TemplateID, p.Version, err)
	}
	def := &template.Definition{}
	if err := json.Unmarshal(tv.Definition, def); err != nil {
		return fmt.Errorf("decode template %s version %d: %w", p.TemplateID, p.Version, err)
	}
	type module struct{ repo, commit, path string }
	done := map[module]bool{}
	var errs []error
	for _, j := range def.Jobs() {
		m := module{j.Source.Repo, tv.JobCommits[j.Name], j.Source.Path}
		if m.repo == "" || m.commit == "" || done[m] {
			continue
		}
		done[m] = true
		if err := h.warmModule(ctx, m.repo, m.commit, m.path); err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", j.Name, err))
		}
	}
	return errors.Join(errs...)
}

// warmModule makes sure this host has the module at path of repo checked out at commit and
// initialised (terraform.Runner.Seed).
func (h *Handler) warmModule(ctx context.Context, repo, commit, path string) error {
	tree, err := h.checkout(ctx, repo, commit)
	if err != nil {
		return err
	}
	return h.Terraform.Seed(ctx, terraform.SeedOpts{Source: tree, Module: path, Commit: commit})
}
