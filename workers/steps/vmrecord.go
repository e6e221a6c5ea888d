package steps

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"

	"horizon/shared/drift"
	"horizon/shared/proxmox"
	"horizon/shared/store"
	"horizon/workers/attempt"
)

// vmCapture is what an apply leaves for drift checks: the record, and the open findings it did
// not fix.
type vmCapture struct {
	rec  drift.Record
	keep []uuid.UUID
}

// captureVM reads back what the apply has just set on the execution's machine — the record a
// drift check compares Proxmox with (shared/drift) — keeping, with what Horizon set before, the
// properties of the findings the apply did not fix (drift.Unfixed). It returns nil, having said
// why in the deploy log, when the machine cannot be read: the previous record then stays, and
// a check tells what it sees against it, rather than the build that succeeded failing.
func (h *Handler) captureVM(ctx context.Context, w *stepWork, out *attempt.Log, outputs map[string]any) *vmCapture {
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
		out.Say("drift: %v; drift checks compare this machine with what the previous apply set", err)
		return nil
	}
	open, err := store.DriftFindingsOfExecution(ctx, h.DB, w.exec.ID)
	if err != nil {
		out.Say("drift: %v; drift checks compare this machine with what the previous apply set", err)
		return nil
	}
	found := make([]drift.Finding, len(open))
	for i, f := range open {
		found[i] = drift.Finding{Path: f.Path, Kind: f.Kind, Expected: f.Expected, Actual: f.Actual}
	}
	rec, kept := drift.Unfixed(rec, found)
	c := &vmCapture{rec: rec}
	for _, i := range kept {
		c.keep = append(c.keep, open[i].ID)
		out.Say("drift: the apply left %s of the machine as Proxmox had it (%s): the finding stands", pathName(open[i].Path), open[i].Kind)
	}
	return c
}

func pathName(p string) string {
	if p == "" {
		return "the identity"
	}
	return p
}
