package isos

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"

	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/proxmox"
	"horizon/shared/sshx"
	"horizon/workers/attempt"
)

// nodeStorage is a storage as a node reports it.
type nodeStorage struct {
	Storage string `json:"storage"`
	Content string `json:"content"`
	Active  int    `json:"active"`
	Shared  int    `json:"shared"`
}

func (s nodeStorage) has(content string) bool {
	return slices.Contains(strings.Split(s.Content, ","), content)
}

// imageContent is the storage content type the image is downloaded as.
func imageContent(kind horizon.ISOKind) string {
	if kind == horizon.ISOKindISO {
		return "iso"
	}
	return "import"
}

// preflight checks, before anything is built, everything the seed's preflight checks and
// reports every problem at once: the server answers and takes the token; the node is online;
// the storages exist on the node, are active and accept their content (the image's, the VM's
// disks, snippets); Horizon's SSH key opens and the node accepts it under its pinned host key;
// the VM ids are free in the cluster (or the ISO's own); the static network is well formed.
func (h *Handler) preflight(ctx context.Context, c *proxmox.Client, w *work, out *attempt.Log) (result, error) {
	var problems []string
	bad := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		problems = append(problems, msg)
		out.Say("✗ %s", msg)
	}
	ok := func(format string, args ...any) { out.Say("✓ "+format, args...) }

	var ver struct {
		Version string `json:"version"`
	}
	if err := c.Get(ctx, "/version", &ver); err != nil {
		switch {
		case errors.Is(err, proxmox.ErrAuth):
			bad("the API token %s is refused by %s: %v", w.server.TokenID, w.server.Name, err)
		default:
			bad("Proxmox server %s (%s) does not answer: %v", w.server.Name, w.server.APIURL, err)
		}
		return result{}, preflightError(problems)
	}
	ok("Proxmox server %s answers (PVE %s) and takes the token %s", w.server.Name, ver.Version, w.server.TokenID)

	var nodes []struct {
		Node   string `json:"node"`
		Status string `json:"status"`
	}
	if err := c.Get(ctx, "/nodes", &nodes); err != nil {
		return result{}, err
	}
	found, online := false, false
	for _, n := range nodes {
		if n.Node == w.iso.Node {
			found, online = true, n.Status == "online"
		}
	}
	switch {
	case !found:
		bad("node %s is not a node of %s", w.iso.Node, w.server.Name)
	case !online:
		bad("node %s is offline", w.iso.Node)
	}
	if !online {
		return result{}, preflightError(problems)
	}
	ok("node %s is online", w.iso.Node)

	var storages []nodeStorage
	if err := c.Get(ctx, "/nodes/"+url.PathEscape(w.iso.Node)+"/storage", &storages); err != nil {
		return result{}, err
	}
	checkStorage := func(name, content, what string) {
		i := slices.IndexFunc(storages, func(s nodeStorage) bool { return s.Storage == name })
		switch {
		case i < 0:
			bad("storage %s does not exist on node %s (%s)", name, w.iso.Node, what)
		case storages[i].Active != 1:
			bad("storage %s is not active on node %s", name, w.iso.Node)
		case !storages[i].has(content):
			bad("storage %s on node %s does not accept %s content (%s); it holds %s", name, w.iso.Node, content, what, storages[i].Content)
		default:
			ok("storage %s on node %s accepts %s content (%s)", name, w.iso.Node, content, what)
		}
	}
	checkStorage(w.iso.Storage, imageContent(w.iso.Kind), "the image")
	checkPrivileges(ctx, c, w, bad, ok)
	if w.iso.Kind == horizon.ISOKindCloudImage {
		checkStorage(w.spec.VM.Disk.Storage, "images", "the VM's disks")
		snippets, err := snippetStorage(w)
		if err != nil {
			bad("%v", err)
		} else {
			checkStorage(snippets.Name, "snippets", "the cloud-init snippets")
		}
		if err := h.checkSSH(ctx, w); err != nil {
			bad("%v", err)
		} else {
			ok("Horizon's SSH key opens and node %s accepts it at %s (host key %s)", w.iso.Node, *w.node.SSHAddress, *w.node.SSHHostKey)
		}
		for i, k := range w.spec.CloudInit.SSHAuthorizedKeys {
			if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil {
				bad("cloud_init.ssh_authorized_keys[%d] does not parse: %v", i, err)
			}
		}
		h.checkVMIDs(ctx, c, w, bad, ok)
		checkNetwork(w.spec, bad, ok)
	}
	if len(problems) > 0 {
		return result{}, preflightError(problems)
	}
	return result{reason: "every check passed"}, nil
}

// checkPrivileges reports what the token lacks for the build, before anything is made: the
// download (Datastore.AllocateTemplate on the image's storage, and Sys.AccessNetwork on the
// node or Sys.Modify on /, as PVE's download-url asks), and for a cloud image the VM, its
// clones (on /vms/<id>) and its disks' storage.
func checkPrivileges(ctx context.Context, c *proxmox.Client, w *work, bad, ok func(string, ...any)) {
	type need struct {
		privs []string
		paths []string // held on any of them
	}
	needs := []need{
		{[]string{"Datastore.AllocateTemplate"}, []string{"/storage/" + w.iso.Storage}},
		{[]string{"Sys.AccessNetwork"}, []string{"/nodes/" + w.iso.Node}},
	}
	if w.iso.Kind == horizon.ISOKindCloudImage {
		needs = append(needs,
			need{[]string{"Datastore.AllocateSpace"}, []string{"/storage/" + w.spec.VM.Disk.Storage}},
			need{append(slices.Clone(proxmox.MachinePrivileges), "VM.Clone"), []string{fmt.Sprintf("/vms/%d", w.spec.VM.VMID)}})
		for _, cl := range w.spec.Clones {
			needs = append(needs, need{proxmox.MachinePrivileges, []string{fmt.Sprintf("/vms/%d", cl.VMID)}})
		}
	}
	held := true
	for _, n := range needs {
		missing, err := c.Lacking(ctx, n.privs, n.paths...)
		if err != nil {
			bad("cannot read the privileges of token %s: %v", w.server.TokenID, err)
			return
		}
		if slices.Equal(missing, []string{"Sys.AccessNetwork"}) {
			// PVE also accepts Sys.Modify on / for a download, for backwards compatibility.
			if missing, err = c.Lacking(ctx, []string{"Sys.Modify"}, "/"); err == nil && len(missing) == 0 {
				continue
			}
			bad("%s (or Sys.Modify on /), which downloading the image needs", proxmox.MissingPrivileges(w.server.TokenID, []string{"Sys.AccessNetwork"}, n.paths...))
			held = false
			continue
		}
		if len(missing) > 0 {
			bad("%s", proxmox.MissingPrivileges(w.server.TokenID, missing, n.paths...))
			held = false
		}
	}
	if held {
		ok("token %s holds the privileges the build needs", w.server.TokenID)
	}
}

func preflightError(problems []string) error {
	// The run's summary puts the stage's name in front ("preflight: …").
	if len(problems) == 1 {
		return errors.New(problems[0])
	}
	return fmt.Errorf("%d problems: %s", len(problems), strings.Join(problems, "; "))
}

// checkVMIDs reports the VM ids of the spec that a VM the ISO did not build holds.
func (h *Handler) checkVMIDs(ctx context.Context, c *proxmox.Client, w *work, bad, ok func(string, ...any)) {
	vms, err := clusterVMs(ctx, c)
	if err != nil {
		bad("cannot list the cluster's VMs: %v", err)
		return
	}
	check := func(vmid int, what, clone string) {
		v, taken := vms[vmid]
		if !taken {
			ok("VM id %d (%s) is free in the cluster", vmid, what)
			return
		}
		cfg, err := getConfig(ctx, c, v.Node, vmid)
		if err != nil {
			bad("VM id %d (%s) is taken by VM %q on node %s, whose configuration cannot be read: %v", vmid, what, v.Name, v.Node, err)
			return
		}
		m := readMarker(cfg["description"])
		if m.iso != w.iso.ID || m.clone != clone {
			bad("VM id %d (%s) is taken by VM %q on node %s, which this ISO did not build", vmid, what, v.Name, v.Node)
			return
		}
		ok("VM id %d (%s) is this ISO's VM %q on node %s", vmid, what, v.Name, v.Node)
	}
	check(w.spec.VM.VMID, "the VM", "")
	for _, cl := range w.spec.Clones {
		check(cl.VMID, "clone "+cl.Name, cl.Name)
	}
}

// checkNetwork checks the static addresses, gateway and name servers (the spec was validated
// when uploaded; the seed's preflight checks them again, and the log says so).
func checkNetwork(spec *isotemplate.Spec, bad, ok func(string, ...any)) {
	n := spec.CloudInit.Network
	valid := true
	check := func(what, v string, prefix bool) {
		var err error
		if prefix {
			_, err = netip.ParsePrefix(v)
		} else {
			_, err = netip.ParseAddr(v)
		}
		if err != nil {
			bad("network: %s %q is not a valid %s", what, v, map[bool]string{true: "address/prefix", false: "address"}[prefix])
			valid = false
		}
	}
	if n.Mode == "static" {
		check("address", n.Address, true)
		check("gateway", n.Gateway, false)
	}
	for _, d := range n.DNS {
		check("DNS server", d, false)
	}
	for _, c := range spec.Clones {
		if c.IP != "" {
			check("clone "+c.Name+" address", c.IP, true)
		}
		if c.Gateway != "" {
			check("clone "+c.Name+" gateway", c.Gateway, false)
		}
	}
	if !valid {
		return
	}
	if n.Mode == "static" {
		ok("network: static %s via %s, DNS %s", n.Address, n.Gateway, strings.Join(n.DNS, " "))
	} else {
		ok("network: DHCP")
	}
}

// checkSSH opens Horizon's key for the server's nodes and connects to the node with it,
// verifying the node's pinned host key.
func (h *Handler) checkSSH(ctx context.Context, w *work) error {
	c, err := h.dialNode(ctx, w)
	if err != nil {
		return err
	}
	_ = c.Close() // a connection only opened to check it
	return nil
}

// dialNode connects to the ISO's node over SSH with Horizon's key for the server, verifying the
// node's pinned host key.
func (h *Handler) dialNode(ctx context.Context, w *work) (*sshx.Client, error) {
	return proxmox.DialNode(ctx, h.Box, w.server, w.iso.Node)
}

// snippetStorage is the storage the cloud-init snippets go to: the spec's, or a node-local one
// with content "snippets", else a shared one (from Horizon's inventory, which knows its path).
func snippetStorage(w *work) (horizon.ProxmoxStorage, error) {
	var shared *horizon.ProxmoxStorage
	for i, s := range w.server.Storages {
		if !slices.Contains(s.Content, "snippets") || !slices.Contains(s.Nodes, w.iso.Node) || s.Path == "" {
			continue
		}
		if name := w.spec.CloudInit.SnippetStorage; name != "" {
			if s.Name == name {
				return s, nil
			}
			continue
		}
		if !s.Shared {
			return s, nil
		}
		shared = &w.server.Storages[i]
	}
	if shared != nil {
		return *shared, nil
	}
	if name := w.spec.CloudInit.SnippetStorage; name != "" {
		return horizon.ProxmoxStorage{}, fmt.Errorf("storage %s is not a storage of node %s with content snippets and a path (Horizon's inventory of %s)", name, w.iso.Node, w.server.Name)
	}
	return horizon.ProxmoxStorage{}, fmt.Errorf("node %s has no storage for snippets (content \"snippets\"); cloud-init cannot be uploaded", w.iso.Node)
}
