package isos

import (
	"context"
	"fmt"

	"horizon/shared/proxmox"
	"horizon/workers/attempt"
)

// template converts the VM to a Proxmox template unless it is one already: it stops the VM if
// it runs, converts it, and reads the configuration back to verify "template: 1".
func (h *Handler) template(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) (result, error) {
	vmid := w.spec.VM.VMID
	cfg, _, found, err := ownVM(ctx, c, w)
	if err != nil {
		return result{}, err
	}
	if !found {
		return result{}, fmt.Errorf("VM %d does not exist: the vm-create stage must run first", vmid)
	}
	if cfg.template() {
		out.Say("VM %d is already a template (template: 1)", vmid)
		return result{skipped: true, reason: fmt.Sprintf("already a template: %d", vmid), outputs: []output{vmOutput(w, true)}}, nil
	}
	if err := h.stopVM(ctx, c, w.iso.Node, vmid, out); err != nil {
		return result{}, err
	}
	if err := h.do(ctx, c, "POST", w.iso.Node, vmPath(w.iso.Node, vmid)+"/template", map[string]any{}, out); err != nil {
		return result{}, fmt.Errorf("convert VM %d to a template: %w", vmid, err)
	}
	if cfg, err = getConfig(ctx, c, w.iso.Node, vmid); err != nil {
		return result{}, err
	}
	if !cfg.template() {
		return result{}, fmt.Errorf("VM %d is not a template after its conversion succeeded (template: %q)", vmid, cfg["template"])
	}
	out.Say("converted VM %d to a template; verified: template: 1", vmid)
	return result{reason: fmt.Sprintf("converted VM %d to a template", vmid), outputs: []output{vmOutput(w, true)}}, nil
}
