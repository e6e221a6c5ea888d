package steps

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"horizon/shared/proxmox"
	"horizon/shared/store"
	"horizon/workers/attempt"
)

// destroy removes the execution: cleanup scripts on the machine first (while it still runs),
// then terraform destroy, then its Terraform workspace (only the workspace when it tracks no
// resource: runner.Forget says why). The step's outcome frees the address
// and the VM id. Cleanup runs once: a destroy tried again after the scripts succeeded (the
// VM may be stopped by then) goes straight to Terraform.
func (h *Handler) destroy(ctx context.Context, w *stepWork, out *attempt.Log) (outcome, error) {
	switch {
	case len(w.job.Cleanup) == 0 || w.exec.AppliedHash == nil:
	case w.exec.CleanedUpAt != nil:
		out.Say("cleanup scripts already succeeded at %s; not running them again", w.exec.CleanedUpAt.UTC().Format(time.RFC3339))
	default:
		if why := h.notRunning(ctx, w); why != "" {
			out.Say("cleanup scripts skipped: %s", why)
			break
		}
		if _, err := h.runScripts(ctx, w, out, w.exec.Outputs, w.job.Cleanup, "cleanup"); err != nil {
			return outcome{}, err
		}
		if err := store.ExecutionCleanedUp(ctx, h.DB, w.exec.ID); err != nil {
			return outcome{}, err
		}
	}
	if forgotten, err := h.Terraform.Forget(ctx, workspace(w)); err != nil {
		return outcome{}, err
	} else if forgotten {
		out.Say("workspace %s tracks no resource (never built): nothing for Terraform to destroy; workspace deleted", workspace(w))
		if w.machine() {
			if err := h.removeCloudInit(ctx, w, out); err != nil {
				return outcome{}, err
			}
		}
		return outcome{destroyed: true}, nil
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
	out.Say("destroyed; workspace %s deleted", workspace(w))
	if w.machine() {
		if err := h.removeCloudInit(ctx, w, out); err != nil {
			return outcome{}, err
		}
	}
	return outcome{destroyed: true}, nil
}

// notRunning asks Proxmox, before the cleanup scripts wait for the machine's SSH, whether its
// VM still exists and runs, and says why not when it does not: a VM deleted outside Horizon
// would otherwise be waited for (ScriptSSHTimeout) at every try of the removal. A stopped VM is
// not started just to be cleaned up and destroyed. When Proxmox does not answer, the scripts
// are tried as before ("").
func (h *Handler) notRunning(ctx context.Context, w *stepWork) string {
	if !w.machine() || w.exec.VMID == nil || w.server == nil {
		return ""
	}
	node := w.exec.Config.Node
	if w.exec.Node != nil {
		node = *w.exec.Node
	}
	client, err := proxmox.ForServer(h.Box, *w.server, 30*time.Second)
	if err != nil {
		return ""
	}
	var status struct {
		Status string `json:"status"`
	}
	err = client.Get(ctx, fmt.Sprintf("/nodes/%s/qemu/%d/status/current", url.PathEscape(node), *w.exec.VMID), &status)
	switch {
	case errors.Is(err, proxmox.ErrNotFound):
		return fmt.Sprintf("VM %d no longer exists on node %s (deleted outside Horizon)", *w.exec.VMID, node)
	case err == nil && status.Status != "running":
		return fmt.Sprintf("VM %d on node %s is %s, and is not started only to be destroyed", *w.exec.VMID, node, status.Status)
	}
	return ""
}
