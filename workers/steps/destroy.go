package steps

import (
	"context"
	"time"

	"horizon/shared/store"
)

// destroy removes the execution: cleanup scripts on the machine first (while it still runs),
// then terraform destroy, then its Terraform workspace. The step's outcome frees the address
// and the VM id. Cleanup runs once: a destroy tried again after the scripts succeeded (the
// VM may be stopped by then) goes straight to Terraform.
func (h *Handler) destroy(ctx context.Context, w *stepWork, out *stepLog) (outcome, error) {
	switch {
	case len(w.job.Cleanup) == 0 || w.exec.AppliedHash == nil:
	case w.exec.CleanedUpAt != nil:
		out.horizon("cleanup scripts already succeeded at %s; not running them again", w.exec.CleanedUpAt.UTC().Format(time.RFC3339))
	default:
		if _, err := h.runScripts(ctx, w, out, w.exec.Outputs, w.job.Cleanup, "cleanup"); err != nil {
			return outcome{}, err
		}
		if err := store.ExecutionCleanedUp(ctx, h.DB, w.exec.ID); err != nil {
			return outcome{}, err
		}
	}
	wd, cleanup, err := h.workdir(ctx, w, out)
	if err != nil {
		return outcome{}, err
	}
	defer cleanup()
	if err := retryTransient(ctx, out, "terraform init", wd.Init); err != nil {
		return outcome{}, err
	}
	if err := retryTransient(ctx, out, "terraform destroy", wd.Destroy); err != nil {
		return outcome{}, err
	}
	if err := wd.DeleteWorkspace(ctx); err != nil {
		return outcome{}, err
	}
	out.horizon("destroyed; workspace %s deleted", workspace(w))
	if w.machine() {
		if err := h.removeCloudInit(ctx, w, out); err != nil {
			return outcome{}, err
		}
	}
	return outcome{destroyed: true}, nil
}
