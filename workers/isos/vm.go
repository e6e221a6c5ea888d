package isos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"horizon/shared/cloudinit"
	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/proxmox"
	"horizon/workers/attempt"
)

// vmOutput is the VM output of the ISO.
func vmOutput(w *work, template bool) output {
	v := w.spec.VM
	return output{key: "vm", value: horizon.ISOVM{VMID: v.VMID, Node: w.iso.Node, Name: v.Name, Template: template}}
}

// ownVM reads the VM with the spec's id and checks that this ISO built it; found is false when
// the cluster has no VM of that id.
func ownVM(ctx context.Context, c *proxmox.Client, w *work) (cfg vmConfig, m marker, found bool, err error) {
	vms, err := clusterVMs(ctx, c)
	if err != nil {
		return nil, m, false, err
	}
	vmid := w.spec.VM.VMID
	existing, ok := vms[vmid]
	if !ok {
		return nil, m, false, nil
	}
	if cfg, err = getConfig(ctx, c, existing.Node, vmid); err != nil {
		return nil, m, true, err
	}
	m = readMarker(cfg["description"])
	switch {
	case m.iso != w.iso.ID || m.clone != "":
		return nil, m, true, fmt.Errorf("VM id %d is taken by VM %q on node %s, which this ISO did not build", vmid, existing.Name, existing.Node)
	case existing.Node != w.iso.Node:
		return nil, m, true, fmt.Errorf("VM %d of this ISO is on node %s, not on %s where the ISO builds", vmid, existing.Node, w.iso.Node)
	}
	return cfg, m, true, nil
}

// vmCreate creates the VM unless it exists; one this ISO built from an earlier configuration
// (it was edited since) is destroyed and created again.
func (h *Handler) vmCreate(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) (result, error) {
	v := w.spec.VM
	cfg, m, found, err := ownVM(ctx, c, w)
	if err != nil {
		return result{}, err
	}
	if found && m.config == w.iso.ConfigHash {
		out.Say("VM exists: %d %q on %s was built from this configuration", v.VMID, cfg["name"], w.iso.Node)
		return result{skipped: true, reason: fmt.Sprintf("VM exists: %d", v.VMID), outputs: []output{vmOutput(w, cfg.template())}}, nil
	}
	var cleared []output
	if found {
		out.Say("VM %d was built from an earlier configuration of this ISO: rebuilding it", v.VMID)
		// Its linked clones hold its base volume: they go first, and the clone stages make
		// them again from the new template.
		vms, err := clusterVMs(ctx, c)
		if err != nil {
			return result{}, err
		}
		destroyed, outputs, err := h.removeClones(ctx, c, w, vms, out)
		if err != nil {
			return result{}, err
		}
		if len(destroyed) > 0 {
			out.Say("destroyed %s, to be cloned again from the rebuilt template", strings.Join(destroyed, ", "))
		}
		cleared = outputs
		if err := h.destroyVM(ctx, c, w.iso.Node, v.VMID, out); err != nil {
			return result{}, err
		}
	}
	body := map[string]any{
		"vmid": v.VMID, "name": v.Name, "cores": v.Cores, "sockets": v.Sockets, "memory": fmt.Sprint(v.MemoryMB),
		"bios": v.BIOS, "ostype": v.OSType, "net0": netValue(v.Network), "serial0": "socket", "vga": "serial0",
		"description": vmDescription(w.iso.Name, w.iso.ID, w.iso.ConfigHash),
	}
	if v.Disk.Bus == "scsi" {
		body["scsihw"] = "virtio-scsi-single"
	}
	if v.CPU != "" {
		body["cpu"] = v.CPU
	}
	if v.Machine != "" {
		body["machine"] = v.Machine
	}
	if v.Agent {
		body["agent"] = "enabled=1"
	}
	if err := h.do(ctx, c, "POST", w.iso.Node, "/nodes/"+url.PathEscape(w.iso.Node)+"/qemu", body, out); err != nil {
		return result{}, fmt.Errorf("create VM %d: %w", v.VMID, err)
	}
	out.Say("created VM %d %q on %s: %d×%d cores, %d MiB, bios %s, net0 %s", v.VMID, v.Name, w.iso.Node, v.Sockets, v.Cores,
		v.MemoryMB, v.BIOS, body["net0"])
	return result{reason: fmt.Sprintf("created VM %d (%s)", v.VMID, v.Name), outputs: append(cleared, vmOutput(w, false))}, nil
}

func netValue(n isotemplate.Network) string {
	s := n.Model + ",bridge=" + n.Bridge
	if n.VLAN != nil {
		s += fmt.Sprintf(",tag=%d", *n.VLAN)
	}
	if n.Firewall {
		s += ",firewall=1"
	}
	return s
}

// ipconfigValue is the ipconfig0 of a static address (CIDR) and its gateway.
func ipconfigValue(address, gateway string) string { return "ip=" + address + ",gw=" + gateway }

func hostpciValue(g isotemplate.PCI) string {
	s := g.Device
	if g.PCIe {
		s += ",pcie=1"
	}
	if g.PrimaryGPU {
		s += ",x-vga=1"
	}
	if g.ROMBar != nil {
		s += fmt.Sprintf(",rombar=%d", boolInt(*g.ROMBar))
	}
	if g.MDev != "" {
		s += ",mdev=" + g.MDev
	}
	return s
}

// imageVolID is the image the disk is imported from.
func imageVolID(w *work) string {
	if img := w.iso.Outputs.Image; img != nil {
		return img.VolID
	}
	return w.iso.Storage + ":" + imageContent(w.iso.Kind) + "/" + w.spec.Source.FileName
}

// vmConfigure gives the VM what the spec asks for, each part only when it is missing or
// different: UEFI (EFI disk) and TPM state; the system disk imported from the image (retried
// while Proxmox reports a lock or a timeout) and grown; GPUs; the cloud-init snippets (over SFTP,
// under the node's gate), cicustom, the cloud-init drive and ipconfig0. A VM already converted
// to a template was configured when it was built.
func (h *Handler) vmConfigure(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) (result, error) {
	v := w.spec.VM
	cfg, _, found, err := ownVM(ctx, c, w)
	if err != nil {
		return result{}, err
	}
	if !found {
		return result{}, fmt.Errorf("VM %d does not exist: the vm-create stage must run first", v.VMID)
	}
	if cfg.template() {
		out.Say("VM %d is already a template: it was configured when it was built", v.VMID)
		return result{skipped: true, reason: "already a template: configured when it was built"}, nil
	}
	node, configPath := w.iso.Node, vmPath(w.iso.Node, v.VMID)+"/config"
	var did []string

	disk := v.Disk.Bus + "0"
	if cfg[disk] == "" {
		value := fmt.Sprintf("%s:0,import-from=%s", v.Disk.Storage, imageVolID(w))
		if v.Disk.SSD {
			value += ",ssd=1"
		}
		if v.Disk.Discard {
			value += ",discard=on"
		}
		err := retry(ctx, out, "import the disk", 3, h.backoff(), func() error {
			return h.do(ctx, c, "POST", node, configPath, map[string]any{disk: value, "boot": "order=" + disk}, out)
		})
		if err != nil {
			return result{}, fmt.Errorf("import %s into %s of VM %d: %w", imageVolID(w), disk, v.VMID, err)
		}
		if cfg, err = getConfig(ctx, c, node, v.VMID); err != nil {
			return result{}, err
		}
		out.Say("imported %s as %s: %s", imageVolID(w), disk, cfg[disk])
		did = append(did, disk+" imported from "+imageVolID(w))
	} else {
		out.Say("disk %s already attached: %s", disk, cfg[disk])
	}
	if want := int64(v.Disk.SizeGB) << 30; want > 0 {
		if have := driveSize(cfg[disk]); have < want {
			if err := h.do(ctx, c, "PUT", node, vmPath(node, v.VMID)+"/resize", map[string]any{"disk": disk, "size": fmt.Sprintf("%dG", v.Disk.SizeGB)}, out); err != nil {
				return result{}, fmt.Errorf("resize %s of VM %d to %dG: %w", disk, v.VMID, v.Disk.SizeGB, err)
			}
			out.Say("grew %s from %s to %dG", disk, humanSize(have), v.Disk.SizeGB)
			did = append(did, fmt.Sprintf("%s grown to %dG", disk, v.Disk.SizeGB))
		} else {
			out.Say("disk %s is already %s (at least %dG)", disk, humanSize(have), v.Disk.SizeGB)
		}
	}

	changes := map[string]any{}
	set := func(key, value, what string) {
		if cfg[key] != value {
			changes[key] = value
			did = append(did, what)
		}
	}
	if v.BIOS == "ovmf" && cfg["efidisk0"] == "" {
		changes["efidisk0"] = fmt.Sprintf("%s:1,efitype=4m,pre-enrolled-keys=%d", v.Disk.Storage, boolInt(v.PreEnrolledKeys))
		did = append(did, "EFI disk")
	}
	if v.TPM && cfg["tpmstate0"] == "" {
		changes["tpmstate0"] = v.Disk.Storage + ":1,version=v2.0"
		did = append(did, "TPM 2.0 state")
	}
	for i, g := range v.GPU {
		set(fmt.Sprintf("hostpci%d", i), hostpciValue(g), fmt.Sprintf("hostpci%d %s", i, g.Device))
	}
	if !strings.Contains(cfg["ide2"], "cloudinit") {
		changes["ide2"] = v.Disk.Storage + ":cloudinit"
		did = append(did, "cloud-init drive")
	}
	cicustom, uploaded, err := h.uploadSnippets(ctx, w, out)
	if err != nil {
		return result{}, err
	}
	if uploaded {
		did = append(did, "cloud-init snippets")
	}
	set("cicustom", cicustom, "cicustom")
	n := w.spec.CloudInit.Network
	ipconfig := "ip=dhcp"
	if n.Mode == "static" {
		ipconfig = ipconfigValue(n.Address, n.Gateway)
	}
	set("ipconfig0", ipconfig, "ipconfig0 "+ipconfig)
	if len(n.DNS) > 0 {
		set("nameserver", strings.Join(n.DNS, " "), "name servers")
	}
	if n.SearchDomain != "" {
		set("searchdomain", n.SearchDomain, "search domain")
	}
	if len(changes) > 0 {
		if err := h.do(ctx, c, "POST", node, configPath, changes, out); err != nil {
			return result{}, fmt.Errorf("configure VM %d: %w", v.VMID, err)
		}
		for _, k := range sortedKeys(changes) {
			out.Say("set %s = %v", k, changes[k])
		}
	}
	if len(did) == 0 {
		return result{skipped: true, reason: "VM already configured"}, nil
	}
	return result{reason: "configured " + strings.Join(did, ", ")}, nil
}

// uploadSnippets renders the user (and vendor) snippets, uploads those that are missing or
// different to the snippet storage over SFTP, and returns the cicustom value naming them.
func (h *Handler) uploadSnippets(ctx context.Context, w *work, out *attempt.Log) (string, bool, error) {
	ci := w.spec.CloudInit
	storage, err := snippetStorage(w)
	if err != nil {
		return "", false, err
	}
	user, err := cloudinit.RenderImageUserData(cloudinit.ImageUser{User: ci.User, AuthorizedKeys: ci.SSHAuthorizedKeys})
	if err != nil {
		return "", false, fmt.Errorf("cloud-init user-data: %w", err)
	}
	docs := []struct {
		part string
		data []byte
	}{{"user", user}}
	if ci.Vendor != nil {
		vendor, err := cloudinit.RenderVendorData(cloudinit.Vendor{Packages: ci.Vendor.Packages, RunCmd: ci.Vendor.RunCmd, Extra: ci.Vendor.Extra})
		if err != nil {
			return "", false, fmt.Errorf("cloud-init vendor-data: %w", err)
		}
		docs = append(docs, struct {
			part string
			data []byte
		}{"vendor", vendor})
	}
	sc, err := h.dialNode(ctx, w)
	if err != nil {
		return "", false, err
	}
	defer sc.Close()
	dir := path.Join(storage.Path, "snippets")
	if err := sc.MkdirAll(ctx, dir); err != nil {
		return "", false, err
	}
	var parts []string
	uploaded := false
	for _, d := range docs {
		name := cloudinit.SnippetName("horizon-iso", w.iso.ID.String(), d.part)
		volid, err := cloudinit.VolumeID(storage.Name, name)
		if err != nil {
			return "", false, err
		}
		parts = append(parts, d.part+"="+volid)
		file := path.Join(dir, name)
		have, err := sc.ReadFile(ctx, file, 0)
		switch {
		case err == nil && bytes.Equal(have, d.data):
			out.Say("cloud-init %s snippet %s is up to date", d.part, volid)
			continue
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return "", false, err
		}
		if err := sc.Upload(ctx, file, bytes.NewReader(d.data), 0o600); err != nil {
			return "", false, fmt.Errorf("upload the cloud-init %s snippet to node %s: %w", d.part, w.iso.Node, err)
		}
		out.Say("uploaded the cloud-init %s snippet to node %s as %s", d.part, w.iso.Node, volid)
		uploaded = true
	}
	return strings.Join(parts, ","), uploaded, nil
}

// backoff is the first pause between attempts of a call that failed transiently.
func (h *Handler) backoff() time.Duration {
	if h.RetryBackoff <= 0 {
		return 10 * time.Second
	}
	return h.RetryBackoff
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func humanSize(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dG", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%.1fG", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%d bytes", b)
}
