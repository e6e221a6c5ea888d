package isos

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"horizon/shared/proxmox"
	"horizon/workers/attempt"
)

func (h *Handler) client(w *work) (*proxmox.Client, error) {
	timeout := h.ProxmoxTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return proxmox.ForServer(h.Box, w.server, timeout)
}

// stopTimeout bounds the request that stops a Proxmox task after a cancel.
const stopTimeout = 10 * time.Second

// wait waits for the task upid on node to end and returns its error (proxmox.TaskExit) when it
// failed. When ctx
// ends first, the task is stopped (DELETE …/tasks/{upid}) so that a canceled stage does not
// leave a download or a clone running behind its back.
func (h *Handler) wait(ctx context.Context, c *proxmox.Client, node, upid string, out *attempt.Log) error {
	poll := h.TaskPoll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	path := fmt.Sprintf("/nodes/%s/tasks/%s", url.PathEscape(node), url.PathEscape(upid))
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		var st struct {
			Status     string `json:"status"`
			ExitStatus string `json:"exitstatus"`
		}
		err := c.Get(ctx, path+"/status", &st)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			return err
		case st.Status == "stopped" && (st.ExitStatus == "OK" || strings.HasPrefix(st.ExitStatus, "WARNINGS")):
			return nil
		case st.Status == "stopped":
			return proxmox.TaskExit(st.ExitStatus)
		}
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
			defer cancel()
			if err := c.Delete(sctx, path, nil); err != nil {
				out.Say("could not stop Proxmox task %s: %v", upid, err)
			} else {
				out.Say("stopped Proxmox task %s", upid)
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

// do sends a write that Proxmox runs as a task (POST create/config/clone/…, PUT resize) and
// waits for the task.
func (h *Handler) do(ctx context.Context, c *proxmox.Client, method, node, path string, body map[string]any, out *attempt.Log) error {
	var upid string
	var err error
	switch method {
	case "POST":
		err = c.Post(ctx, path, body, &upid)
	case "PUT":
		err = c.Put(ctx, path, body, &upid)
	case "DELETE":
		err = c.Delete(ctx, path, &upid)
	default:
		return fmt.Errorf("method %s", method)
	}
	if err != nil {
		return err
	}
	if upid == "" {
		return nil // answered synchronously
	}
	return h.wait(ctx, c, node, upid, out)
}

// clusterVM is a VM of the cluster as /cluster/resources lists it.
type clusterVM struct {
	VMID     int    `json:"vmid"`
	Node     string `json:"node"`
	Name     string `json:"name"`
	Status   string `json:"status"`
	Template int    `json:"template"`
}

// clusterVMs returns the cluster's VMs by id.
func clusterVMs(ctx context.Context, c *proxmox.Client) (map[int]clusterVM, error) {
	var vms []clusterVM
	if err := c.Get(ctx, "/cluster/resources?type=vm", &vms); err != nil {
		return nil, err
	}
	out := make(map[int]clusterVM, len(vms))
	for _, v := range vms {
		out[v.VMID] = v
	}
	return out, nil
}

// vmConfig is a VM's configuration, every value as a string.
type vmConfig map[string]string

func getConfig(ctx context.Context, c *proxmox.Client, node string, vmid int) (vmConfig, error) {
	var raw map[string]any
	if err := c.Get(ctx, vmPath(node, vmid)+"/config", &raw); err != nil {
		return nil, err
	}
	cfg := vmConfig{}
	for k, v := range raw {
		switch x := v.(type) {
		case string:
			cfg[k] = x
		case float64:
			cfg[k] = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			cfg[k] = fmt.Sprint(x)
		}
	}
	return cfg, nil
}

func (cfg vmConfig) template() bool { return cfg["template"] == "1" }

func vmPath(node string, vmid int) string {
	return fmt.Sprintf("/nodes/%s/qemu/%d", url.PathEscape(node), vmid)
}

// The marker in a VM's description that says which ISO built it, from which configuration, and
// as which clone.
const (
	markISO    = "horizon-iso: "
	markConfig = "horizon-config: "
	markClone  = "horizon-clone: "
)

// marker is what a VM's description says of who built it.
type marker struct {
	iso    uuid.UUID
	config string
	clone  string
}

func readMarker(description string) marker {
	var m marker
	for _, line := range strings.Split(description, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, markISO):
			m.iso, _ = uuid.Parse(strings.TrimPrefix(line, markISO)) // a malformed id is no marker
		case strings.HasPrefix(line, markConfig):
			m.config = strings.TrimPrefix(line, markConfig)
		case strings.HasPrefix(line, markClone):
			m.clone = strings.TrimPrefix(line, markClone)
		}
	}
	return m
}

func vmDescription(isoName string, iso uuid.UUID, config string) string {
	return fmt.Sprintf("Built by Horizon, ISO %s.\n%s%s\n%s%s\n", isoName, markISO, iso, markConfig, config)
}

func cloneDescription(isoName string, iso uuid.UUID, clone string) string {
	return fmt.Sprintf("Cloned by Horizon, ISO %s.\n%s%s\n%s%s\n", isoName, markISO, iso, markClone, clone)
}

// stopVM powers a running VM off.
func (h *Handler) stopVM(ctx context.Context, c *proxmox.Client, node string, vmid int, out *attempt.Log) error {
	var st struct {
		Status string `json:"status"`
	}
	if err := c.Get(ctx, vmPath(node, vmid)+"/status/current", &st); err != nil {
		return err
	}
	if st.Status != "running" {
		return nil
	}
	if err := h.do(ctx, c, "POST", node, vmPath(node, vmid)+"/status/stop", map[string]any{}, out); err != nil {
		return fmt.Errorf("stop VM %d: %w", vmid, err)
	}
	out.Say("stopped VM %d", vmid)
	return nil
}

// destroyVM stops a VM and destroys it with its disks.
func (h *Handler) destroyVM(ctx context.Context, c *proxmox.Client, node string, vmid int, out *attempt.Log) error {
	if err := h.stopVM(ctx, c, node, vmid, out); err != nil {
		return err
	}
	if err := h.do(ctx, c, "DELETE", node, vmPath(node, vmid)+"?purge=1&destroy-unreferenced-disks=1", nil, out); err != nil {
		return fmt.Errorf("destroy VM %d: %w", vmid, err)
	}
	out.Say("destroyed VM %d", vmid)
	return nil
}

var sizeOptRE = regexp.MustCompile(`(?:^|,)size=(\d+(?:\.\d+)?)([KMGT]?)(?:,|$)`)

// driveSize is the size= of a drive value, in bytes (0 when absent).
func driveSize(drive string) int64 {
	m := sizeOptRE.FindStringSubmatch(drive)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseFloat(m[1], 64) // the pattern guarantees a number
	unit := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[2]]
	return int64(n * unit)
}

// transient reports whether a Proxmox error says "try again shortly" (a lock held, a timeout).
func transient(err error) bool { return errors.Is(err, proxmox.ErrBusy) }

// retry runs op up to attempts times while it fails transiently, pausing backoff, then twice
// as long, between attempts, and saying so in the log.
func retry(ctx context.Context, out *attempt.Log, what string, attempts int, backoff time.Duration, op func() error) error {
	for try := 1; ; try++ {
		err := op()
		if err == nil || try >= attempts || !transient(err) || ctx.Err() != nil {
			return err
		}
		out.Say("%s: attempt %d/%d failed (%s); retrying in %s", what, try, attempts, attempt.FirstLine(err.Error()), backoff)
		if !sleep(ctx, backoff) {
			return err
		}
		backoff *= 2
	}
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
