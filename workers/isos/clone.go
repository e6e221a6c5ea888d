package isos

import (
	"context"
	"fmt"
	"strings"

	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/workers/attempt"
)

// clone makes one clone of the template: unless it exists, clones it (linked from a template
// unless the spec asks for full clones), sets its address (its host name is its VM name, which
// Proxmox's cloud-init meta-data carries) and starts it. A clone that exists is completed if it
// lacks its address or is stopped, and left alone otherwise. Errors name the clone: the run's
// summary lists each failing clone, and the other clones go on regardless.
func (h *Handler) clone(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) (result, error) {
	cl := w.spec.Clones[deref(w.Step.ExecutionIndex)]
	res, err := h.cloneOne(ctx, c, w, out)
	if err != nil {
		return result{}, fmt.Errorf("clone %s (VM %d): %w", cl.Name, cl.VMID, err)
	}
	return res, nil
}

func (h *Handler) cloneOne(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) (result, error) {
	i := deref(w.Step.ExecutionIndex)
	if i < 0 || i >= len(w.spec.Clones) {
		return result{}, fmt.Errorf("the spec has no clone %d", i)
	}
	cl := w.spec.Clones[i]
	node := w.iso.Node
	vms, err := clusterVMs(ctx, c)
	if err != nil {
		return result{}, err
	}
	var did []string
	existing, exists := vms[cl.VMID]
	if exists {
		cfg, err := getConfig(ctx, c, existing.Node, cl.VMID)
		if err != nil {
			return result{}, err
		}
		if m := readMarker(cfg["description"]); m.iso != w.iso.ID || m.clone != cl.Name {
			return result{}, fmt.Errorf("VM id %d is taken by VM %q on node %s, which this ISO did not clone", cl.VMID, existing.Name, existing.Node)
		}
		node = existing.Node
		out.Say("clone %s exists: VM %d on %s", cl.Name, cl.VMID, node)
	} else {
		source := w.spec.VM.VMID
		src, ok := vms[source]
		if !ok {
			return result{}, fmt.Errorf("VM %d to clone from does not exist: the vm-create stage must run first", source)
		}
		full := w.spec.FullClones || src.Template != 1
		body := map[string]any{"newid": cl.VMID, "name": cl.Name, "full": boolInt(full),
			"description": cloneDescription(w.iso.Name, w.iso.ID, cl.Name)}
		if err := h.do(ctx, c, "POST", src.Node, vmPath(src.Node, source)+"/clone", body, out); err != nil {
			return result{}, fmt.Errorf("clone VM %d: %w", source, err)
		}
		kind := "linked"
		if full {
			kind = "full"
		}
		out.Say("cloned VM %d to VM %d %q (%s clone)", source, cl.VMID, cl.Name, kind)
		did = append(did, fmt.Sprintf("created VM %d (%s clone)", cl.VMID, kind))
	}

	cfg, err := getConfig(ctx, c, node, cl.VMID)
	if err != nil {
		return result{}, err
	}
	if cl.IP != "" {
		gw := cl.Gateway
		if gw == "" {
			gw = w.spec.CloudInit.Network.Gateway
		}
		want := ipconfigValue(cl.IP, gw)
		if cfg["ipconfig0"] != want {
			if err := h.do(ctx, c, "POST", node, vmPath(node, cl.VMID)+"/config", map[string]any{"ipconfig0": want}, out); err != nil {
				return result{}, fmt.Errorf("set the address %s: %w", cl.IP, err)
			}
			out.Say("set clone %s's address to %s via %s; its host name is its VM name", cl.Name, cl.IP, gw)
			did = append(did, "address "+cl.IP)
		}
	}
	started := false
	if cl.StartClone() {
		var st struct {
			Status string `json:"status"`
		}
		if err := c.Get(ctx, vmPath(node, cl.VMID)+"/status/current", &st); err != nil {
			return result{}, err
		}
		if st.Status != "running" {
			if err := h.do(ctx, c, "POST", node, vmPath(node, cl.VMID)+"/status/start", map[string]any{}, out); err != nil {
				return result{}, fmt.Errorf("start: %w", err)
			}
			out.Say("started clone %s (VM %d)", cl.Name, cl.VMID)
			did = append(did, "started")
		}
		started = true
	}
	o := output{clone: cl.Name, value: horizon.ISOClone{Name: cl.Name, VMID: cl.VMID, Node: node, IP: cl.IP, Started: started}}
	if len(did) == 0 {
		return result{skipped: true, reason: fmt.Sprintf("clone %s exists: VM %d", cl.Name, cl.VMID), outputs: []output{o}}, nil
	}
	return result{reason: fmt.Sprintf("clone %s: %s", cl.Name, strings.Join(did, ", ")), outputs: []output{o}}, nil
}
