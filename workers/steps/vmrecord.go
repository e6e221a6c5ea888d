package steps

import (
	"context"
	"strconv"
	"time"

	"horizon/shared/drift"
	"horizon/shared/proxmox"
	"horizon/workers/attempt"
)

// captureVM reads back what the apply has just set on the execution's machine — the record a
// drift check compares Proxmox with (shared/drift). It returns nil, having said why in the
// deploy log, when the machine cannot be read: the machine is then not checked for drift
// until its next apply, rather than compared with a stale record (false alarms) or failing a
// build that succeeded.
func (h *Handler) captureVM(ctx context.Context, w *stepWork, out *attempt.Log, outputs map[string]any) *drift.Record {
	if !w.machine() || w.server == nil {
		return nil
	}
	vmid := 0
	if w.exec.VMID != nil {
		vmid = *w.exec.VMID
	} else if n, err := strconv.Atoi(stringValue(outputs["vm_id"])); err == nil {
		vmid = n
	}
	if vmid == 0 {
		out.Say("drift: the module reports no VM id; this machine is not checked for drift")
		return nil
	}
	client, err := proxmox.ForServer(h.Box, *w.server, 30*time.Second)
	if err != nil {
		out.Say("drift: %v; this machine is not checked for drift until its next apply", err)
		return nil
	}
	rec, err := drift.CaptureRecord(ctx, client, drift.Record{ExecutionID: w.exec.ID, StackID: w.stack.ID, ServerID: w.server.ID, VMID: vmid})
	if err != nil {
		out.Say("drift: %v; this machine is not checked for drift until its next apply", err)
		return nil
	}
	return &rec
}
