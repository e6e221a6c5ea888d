package drift

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// API is the part of a Proxmox client the reads below use (*proxmox.Client has it): a GET of
// a path relative to /api2/json whose data is decoded into v. Nothing here writes.
type API interface {
	Get(ctx context.Context, path string, v any) error
}

// ListVMs is the cluster listing of every VM: one call per cluster.
func ListVMs(ctx context.Context, api API) ([]Resource, error) {
	var out []Resource
	if err := api.Get(ctx, "/cluster/resources?type=vm", &out); err != nil {
		return nil, fmt.Errorf("list the cluster's VMs: %w", err)
	}
	return out, nil
}

// ReadConfig is a VM's config, as PVE answers it (digest included).
func ReadConfig(ctx context.Context, api API, node string, vmid int) (map[string]any, error) {
	var out map[string]any
	if err := api.Get(ctx, fmt.Sprintf("/nodes/%s/qemu/%d/config", url.PathEscape(node), vmid), &out); err != nil {
		return nil, fmt.Errorf("read the config of VM %d on %s: %w", vmid, node, err)
	}
	return out, nil
}

// ReadTasks is a node's task log since a time (finished and running tasks, newest first, up
// to 1000 of them).
func ReadTasks(ctx context.Context, api API, node string, since time.Time) ([]Task, error) {
	var out []Task
	path := fmt.Sprintf("/nodes/%s/tasks?source=all&limit=1000&since=%d", url.PathEscape(node), since.Unix())
	if err := api.Get(ctx, path, &out); err != nil {
		return nil, fmt.Errorf("read the task log of %s: %w", node, err)
	}
	return out, nil
}

// ErrNotListed is returned by Capture when the VM is not in the cluster listing.
var ErrNotListed = errors.New("the VM is not in the cluster listing")

// CaptureRecord reads what Horizon has just set on a machine — its listing row and its config — and
// returns rec completed with it: the record a check will compare with. rec holds the ids and
// the VM id; node is where Horizon built it.
func CaptureRecord(ctx context.Context, api API, rec Record) (Record, error) {
	vms, err := ListVMs(ctx, api)
	if err != nil {
		return rec, err
	}
	var row *Resource
	for i := range vms {
		if vms[i].VMID == rec.VMID {
			row = &vms[i]
		}
	}
	if row == nil {
		return rec, fmt.Errorf("VM %d: %w", rec.VMID, ErrNotListed)
	}
	raw, err := ReadConfig(ctx, api, row.Node, rec.VMID)
	if err != nil {
		return rec, err
	}
	rec.Node, rec.Name, rec.Pool, rec.Status = row.Node, row.Name, row.Pool, row.Status
	rec.Tags = NormalizeTags(row.Tags)
	rec.MaxMem, rec.MaxCPU, rec.MaxDisk = row.MaxMem, int(row.MaxCPU), row.MaxDisk
	rec.Config, rec.Digest, rec.UUID, rec.CTime = Capture(raw)
	return rec, nil
}
