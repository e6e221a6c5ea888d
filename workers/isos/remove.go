package isos

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"horizon/shared/cloudinit"
	"horizon/shared/horizon"
	"horizon/shared/proxmox"
	"horizon/shared/store"
	"horizon/workers/attempt"
)

// remove destroys what the ISO's builds made on Proxmox: its clones first (a template with
// linked clones cannot be destroyed), then its VM, its cloud-init snippets, and its image —
// unless another ISO of the cluster uses the same file (a shared storage, or the same node).
// Only VMs whose description says this ISO built them are destroyed; a VM id another VM holds
// now is left alone and said so.
func (h *Handler) remove(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) (result, error) {
	vms, err := clusterVMs(ctx, c)
	if err != nil {
		return result{}, err
	}
	done, outputs, err := h.removeClones(ctx, c, w, vms, out)
	if err != nil {
		return result{}, err
	}
	vmid := 0
	if w.iso.Outputs.VM != nil {
		vmid = w.iso.Outputs.VM.VMID
	} else if w.spec.VM != nil {
		vmid = w.spec.VM.VMID
	}
	if vmid != 0 {
		destroyed, err := h.destroyOwn(ctx, c, w, vms, vmid, "VM", "", out)
		if err != nil {
			return result{}, err
		}
		if destroyed {
			done = append(done, fmt.Sprintf("VM (VM %d)", vmid))
		}
		outputs = append(outputs, output{key: "vm"})
	}
	if w.spec.CloudInit != nil {
		if removed, err := h.removeSnippets(ctx, c, w, out); err != nil {
			return result{}, err
		} else if removed > 0 {
			done = append(done, fmt.Sprintf("%d cloud-init snippet(s)", removed))
		}
	}
	copies, err := h.removeCopies(ctx, c, w, out)
	if err != nil {
		return result{}, err
	}
	done = append(done, copies...)
	if removed, err := h.removeImage(ctx, c, w, out); err != nil {
		return result{}, err
	} else if removed != "" {
		done = append(done, "image "+removed)
	}
	outputs = append(outputs, output{key: "image"})
	if len(done) == 0 {
		return result{reason: "nothing of this ISO was left on Proxmox", outputs: outputs}, nil
	}
	return result{reason: "removed " + strings.Join(done, ", "), outputs: outputs}, nil
}

// removeClones destroys the clones this ISO made (those its outputs or its spec name), in name
// order, and returns what it destroyed and the outputs to clear. A template with linked clones
// cannot be destroyed, so its removal, and its rebuild, begin here.
func (h *Handler) removeClones(ctx context.Context, c *proxmox.Client, w *work, vms map[int]clusterVM, out *attempt.Log) ([]string, []output, error) {
	clones := map[string]int{}
	for name, cl := range w.iso.Outputs.Clones {
		clones[name] = cl.VMID
	}
	if w.spec.VM != nil {
		for _, cl := range w.spec.Clones {
			clones[cl.Name] = cl.VMID
		}
	}
	names := make([]string, 0, len(clones))
	for n := range clones {
		names = append(names, n)
	}
	slices.Sort(names)
	var done []string
	var outputs []output
	for _, name := range names {
		destroyed, err := h.destroyOwn(ctx, c, w, vms, clones[name], "clone "+name, name, out)
		if err != nil {
			return nil, nil, err
		}
		if destroyed {
			done = append(done, fmt.Sprintf("clone %s (VM %d)", name, clones[name]))
		}
		outputs = append(outputs, output{clone: name})
	}
	return done, outputs, nil
}

// destroyOwn destroys VM vmid if this ISO made it (as its VM, clone "", or as clone clone), and
// reports whether it did; a VM that does not exist, or that another made, is left alone.
func (h *Handler) destroyOwn(ctx context.Context, c *proxmox.Client, w *work, vms map[int]clusterVM, vmid int, what, clone string, out *attempt.Log) (bool, error) {
	v, ok := vms[vmid]
	if !ok {
		out.Say("%s: VM %d does not exist", what, vmid)
		return false, nil
	}
	cfg, err := getConfig(ctx, c, v.Node, vmid)
	if err != nil {
		return false, err
	}
	if m := readMarker(cfg["description"]); m.iso != w.iso.ID || m.clone != clone {
		out.Say("%s: VM %d (%q) was not built by this ISO: left alone", what, vmid, v.Name)
		return false, nil
	}
	if err := h.destroyVM(ctx, c, v.Node, vmid, out); err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	return true, nil
}

// removeImage deletes the ISO's image unless another ISO of the cluster that sees the same
// file uses it; it returns the volume removed, or "".
func (h *Handler) removeImage(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) (string, error) {
	content := imageContent(w.iso.Kind)
	volid := imageVolID(w)
	storage, _, _ := strings.Cut(volid, ":")
	others, err := store.ISOsWithImage(ctx, h.DB, w.iso.ServerID, volid, w.iso.ID)
	if err != nil {
		return "", err
	}
	shared := slices.ContainsFunc(w.server.Storages, func(s horizon.ProxmoxStorage) bool { return s.Name == storage && s.Shared })
	for _, o := range others {
		if shared || o.Node == w.iso.Node {
			out.Say("image %s kept: ISO %s uses it too", volid, o.Name)
			return "", nil
		}
	}
	_, found, err := findVolume(ctx, c, w.iso.Node, storage, content, volid)
	if err != nil {
		return "", err
	}
	if !found {
		out.Say("image %s is not on storage %s", volid, storage)
		return "", nil
	}
	path := proxmox.ContentPath(w.iso.Node, storage, volid)
	if err := h.do(ctx, c, "DELETE", w.iso.Node, path, nil, out); err != nil {
		return "", fmt.Errorf("delete image %s: %w", volid, err)
	}
	out.Say("deleted image %s", volid)
	return volid, nil
}

// removeCopies deletes the copies of the image that machine builds made on other nodes
// (workers/steps isoOnNode), and forgets them.
func (h *Handler) removeCopies(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) ([]string, error) {
	copies, err := store.ISOCopies(ctx, h.DB, w.iso.ID)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, cp := range copies {
		_, found, err := findVolume(ctx, c, cp.Node, cp.Storage, "iso", cp.VolID)
		if err != nil {
			return done, err
		}
		if found {
			if err := h.do(ctx, c, "DELETE", cp.Node, proxmox.ContentPath(cp.Node, cp.Storage, cp.VolID), nil, out); err != nil {
				return done, fmt.Errorf("delete the copy %s on node %s: %w", cp.VolID, cp.Node, err)
			}
			out.Say("deleted the copy %s on node %s", cp.VolID, cp.Node)
			done = append(done, fmt.Sprintf("copy %s on node %s", cp.VolID, cp.Node))
		}
		if err := store.ISOCopyDelete(ctx, h.DB, w.iso.ID, cp.Node); err != nil {
			return done, err
		}
	}
	return done, nil
}

// removeSnippets deletes the ISO's cloud-init snippets through the storage API.
func (h *Handler) removeSnippets(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) (int, error) {
	storage, err := snippetStorage(w)
	if err != nil {
		out.Say("snippets: %v", err)
		return 0, nil
	}
	n := 0
	for _, part := range []string{"user", "vendor"} {
		volid, err := cloudinit.VolumeID(storage.Name, cloudinit.SnippetName("horizon-iso", w.iso.ID.String(), part))
		if err != nil {
			return n, err
		}
		_, found, err := findVolume(ctx, c, w.iso.Node, storage.Name, "snippets", volid)
		if err != nil {
			return n, err
		}
		if !found {
			continue
		}
		path := proxmox.ContentPath(w.iso.Node, storage.Name, volid)
		if err := h.do(ctx, c, "DELETE", w.iso.Node, path, nil, out); err != nil {
			return n, fmt.Errorf("delete snippet %s: %w", volid, err)
		}
		out.Say("deleted snippet %s", volid)
		n++
	}
	return n, nil
}
