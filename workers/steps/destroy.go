package steps

import (
	"context"
)

// destroy removes the execution: cleanup scripts on the machine first (while it still runs),
// then terraform destroy, then its Terraform workspace. The step's outcome frees the address
// and the VM id.
func (h *Handler) destroy(ctx context.Context, w *stepWork, out *stepLog) (outcome, error) {
	if len(w.job.Cleanup) > 0 && w.exec.AppliedHash != nil {
		if _, err := h.runScripts(ctx, w, out, w.exec.Outputs, w.job.Cleanup, "cleanup"); err != nil {
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
	return outcome{destroyed: true}, nil
}
