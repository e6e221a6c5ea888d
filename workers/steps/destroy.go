package steps

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"horizon/shared/proxmox"
	"horizon/shared/store"
	"horizon/workers/attempt"
)

// destroy removes the execution: cleanup scripts on the machine first (while it still runs),
// then terraform destroy, then its Terraform workspace (only the workspace when it tracks no
// resource: runner.Forget says why), then the VM if Proxmox still has it (removeUnrecordedVM).
// The step's outcome frees the address and the VM id. Cleanup runs once: a destroy tried again
// after the scripts succeeded (the VM may be stopped by then) goes straight to Terraform.
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
		if err := h.removeUnrecordedVM(ctx, w, out); err != nil {
			return outcome{}, err
		}
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
	if err := h.removeUnrecordedVM(ctx, w, out); err != nil {
		return outcome{}, err
	}
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

// unlockWait bounds how long removeUnrecordedVM waits for a task that holds the VM's lock (the
// creation an interrupted apply started) to end; the module's own wait is as long.
const unlockWait = 10 * time.Minute

// removeUnrecordedVM deletes the execution's VM when Proxmox still has it after Terraform
// destroyed all its state records. Terraform destroys only what its state records, and an apply
// cut off after Proxmox made the VM but before Terraform saved its state leaves a VM no state
// knows: a worker SIGKILLed mid-apply kills Terraform with it, and Terraform saves state during
// an apply only every 20 s and at its end. A later apply of the execution adopts that VM (the
// module's contract); when none comes — the run was canceled and the stack removed, or the
// machine removed by an edit — this is the only place left that can delete it.
//
// The VM is the execution's when it has the execution's VM id (allocated once per execution
// and cluster, held until this step's outcome frees it) and its name (reserved in the cluster
// the same way); a VM with that id and another name is someone else's and is left alone, as
// the module's destroy does. A VM still locked by a task (the interrupted creation, still
// running in Proxmox) is waited for; a Proxmox that does not answer fails the step, to be
// tried again, rather than leave the VM behind unseen.
func (h *Handler) removeUnrecordedVM(ctx context.Context, w *stepWork, out *attempt.Log) error {
	if !w.machine() || w.exec.VMID == nil {
		return nil
	}
	vmid, name := *w.exec.VMID, vmName(w)
	if w.server == nil {
		out.Say("warning: the machine's Proxmox server is no longer in Horizon: not checking that VM %d (%s) is gone", vmid, name)
		return nil
	}
	client, err := proxmox.ForServer(h.Box, *w.server, 30*time.Second)
	if err != nil {
		return err
	}
	var vms []clusterVM
	if err := client.Get(ctx, "/cluster/resources?type=vm", &vms); err != nil {
		return fmt.Errorf("check that VM %d (%s) is gone: %w", vmid, name, err)
	}
	i := slices.IndexFunc(vms, func(v clusterVM) bool { return v.VMID == vmid })
	if i < 0 {
		return nil // the usual case: Terraform destroyed it, or it was never made
	}
	path := fmt.Sprintf("/nodes/%s/qemu/%d", url.PathEscape(vms[i].Node), vmid)
	var cfg struct {
		Name string `json:"name"`
		Lock string `json:"lock"`
	}
	for deadline := time.Now().Add(unlockWait); ; {
		if err := client.Get(ctx, path+"/config", &cfg); errors.Is(err, proxmox.ErrNotFound) {
			return nil
		} else if err != nil {
			return fmt.Errorf("check that VM %d (%s) is gone: %w", vmid, name, err)
		}
		if cfg.Name != name {
			out.Say("VM %d on node %s is called %q, not %q: it is not this machine's, leaving it", vmid, vms[i].Node, cfg.Name, name)
			return nil
		}
		if cfg.Lock == "" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("VM %d (%s) on node %s is still locked (%s) after %s; not deleting it", vmid, name, vms[i].Node, cfg.Lock, unlockWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	out.Say("VM %d (%s) is still on node %s though Terraform's state does not record it (an apply cut off before it saved its state made it): deleting it",
		vmid, name, vms[i].Node)
	var status struct {
		Status string `json:"status"`
	}
	if err := client.Get(ctx, path+"/status/current", &status); err != nil {
		return fmt.Errorf("stop VM %d: %w", vmid, err)
	}
	if status.Status == "running" {
		if err := h.pveTask(ctx, client, "POST", path+"/status/stop"); err != nil {
			return fmt.Errorf("stop VM %d: %w", vmid, err)
		}
	}
	if err := h.pveTask(ctx, client, "DELETE", path+"?purge=1&destroy-unreferenced-disks=1"); err != nil {
		return fmt.Errorf("delete VM %d: %w", vmid, err)
	}
	out.Say("deleted VM %d (%s)", vmid, name)
	return nil
}

// clusterVM is a VM as /cluster/resources lists it: the cluster knows its node wherever it
// migrated.
type clusterVM struct {
	VMID int    `json:"vmid"`
	Node string `json:"node"`
}

// pveTask sends a POST or DELETE that Proxmox runs as a task and waits for the task to end.
func (h *Handler) pveTask(ctx context.Context, client *proxmox.Client, method, path string) error {
	var upid string
	var err error
	if method == "DELETE" {
		err = client.Delete(ctx, path, &upid)
	} else {
		err = client.Post(ctx, path, map[string]any{}, &upid)
	}
	if err != nil || upid == "" {
		return err
	}
	return client.WaitTask(ctx, upid, 0)
}
