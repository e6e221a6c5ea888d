package proxmox

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"

	pve "github.com/luthermonson/go-proxmox"
)

// Inventory is what a PVE cluster offers Horizon, as discovered through its API.
type Inventory struct {
	Version string
	// Cluster is the cluster's name; empty for a standalone node.
	Cluster  string
	Nodes    []Node
	Storages []Storage
	Pools    []Pool
	// ISOs are the installation images found on storages with content "iso".
	ISOs []ISO
}

// Node is a cluster member.
type Node struct {
	Name   string
	Online bool
	CPUs   int
	Memory uint64 // bytes
	// Lacks are the privileges Horizon uses on the node that the token does not hold.
	Lacks []string
}

// Storage is one storage of the cluster, with the nodes it is active on.
type Storage struct {
	Name    string
	Type    string
	Content []string // e.g. images, iso, snippets
	Shared  bool
	Path    string // the directory of file-based storages (dir, nfs, cifs …), "" otherwise
	Nodes   []string
	// Lacks are the privileges Horizon uses on the storage that the token does not hold.
	Lacks []string
}

// HasContent reports whether the storage accepts content of kind (e.g. "snippets").
func (s Storage) HasContent(kind string) bool {
	for _, c := range s.Content {
		if c == kind {
			return true
		}
	}
	return false
}

// Pool is a resource pool.
type Pool struct {
	ID      string
	Comment string
	// Lacks are the privileges building machines in the pool needs that the token holds
	// neither on the pool nor on /vms.
	Lacks []string
}

// ISO is an image file on a storage, seen from Nodes.
type ISO struct {
	VolID   string // e.g. local:iso/debian-12.iso
	Storage string
	Size    uint64
	Nodes   []string
}

// Discover reads the cluster's inventory: version, nodes and their state, storages (content,
// shared or not, path), pools and ISO files. Offline nodes are listed but not asked about
// their storages.
func (c *Client) Discover(ctx context.Context) (Inventory, error) {
	var inv Inventory
	var ver pve.Version
	if err := c.Get(ctx, "/version", &ver); err != nil {
		return inv, err
	}
	inv.Version = ver.Version

	var status []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := c.Get(ctx, "/cluster/status", &status); err != nil {
		return inv, err
	}
	for _, s := range status {
		if s.Type == "cluster" {
			inv.Cluster = s.Name
		}
	}

	var nodes []pve.NodeStatus
	if err := c.Get(ctx, "/nodes", &nodes); err != nil {
		return inv, err
	}
	for _, n := range nodes {
		inv.Nodes = append(inv.Nodes, Node{Name: n.Node, Online: n.Status == "online", CPUs: n.MaxCPU, Memory: n.MaxMem})
	}
	sort.Slice(inv.Nodes, func(i, j int) bool { return inv.Nodes[i].Name < inv.Nodes[j].Name })

	var cfgs []pve.ClusterStorage
	if err := c.Get(ctx, "/storage", &cfgs); err != nil {
		return inv, err
	}
	storages := map[string]*Storage{}
	for _, s := range cfgs {
		storages[s.Storage] = &Storage{Name: s.Storage, Type: s.Type, Content: splitList(s.Content), Shared: s.Shared == 1, Path: s.Path}
	}
	for _, n := range inv.Nodes {
		if !n.Online {
			continue
		}
		var active []pve.Storage
		if err := c.Get(ctx, "/nodes/"+url.PathEscape(n.Name)+"/storage", &active); err != nil {
			return inv, err
		}
		for _, a := range active {
			s, ok := storages[a.Name]
			if !ok || a.Active != 1 || (a.Enabled == 0 && a.Active == 0) {
				continue
			}
			s.Nodes = append(s.Nodes, n.Name)
		}
	}
	for _, s := range storages {
		inv.Storages = append(inv.Storages, *s)
	}
	sort.Slice(inv.Storages, func(i, j int) bool { return inv.Storages[i].Name < inv.Storages[j].Name })

	var pools []pve.Pool
	if err := c.Get(ctx, "/pools", &pools); err != nil {
		return inv, err
	}
	for _, p := range pools {
		inv.Pools = append(inv.Pools, Pool{ID: p.PoolID, Comment: p.Comment})
	}
	sort.Slice(inv.Pools, func(i, j int) bool { return inv.Pools[i].ID < inv.Pools[j].ID })

	isos, err := c.discoverISOs(ctx, inv.Storages)
	if err != nil {
		return inv, err
	}
	inv.ISOs = isos
	return inv, c.markLacks(ctx, &inv)
}

// markLacks records, for every node, storage and pool, which of the privileges Horizon uses
// there the token does not hold, so that registration shows what Horizon may not do before a
// build fails for it.
func (c *Client) markLacks(ctx context.Context, inv *Inventory) error {
	var err error
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		if n.Lacks, err = c.Lacking(ctx, []string{"Sys.AccessNetwork", "Sys.Audit"}, "/nodes/"+n.Name); err != nil {
			return err
		}
	}
	for i := range inv.Storages {
		s := &inv.Storages[i]
		want := []string{"Datastore.Allocate", "Datastore.Audit"}
		if s.HasContent("images") {
			want = append(want, "Datastore.AllocateSpace")
		}
		if s.HasContent("iso") || s.HasContent("import") || s.HasContent("snippets") {
			want = append(want, "Datastore.AllocateTemplate")
		}
		if s.Lacks, err = c.Lacking(ctx, want, "/storage/"+s.Name); err != nil {
			return err
		}
	}
	for i := range inv.Pools {
		p := &inv.Pools[i]
		if p.Lacks, err = c.Lacking(ctx, MachinePrivileges, "/pool/"+p.ID, "/vms"); err != nil {
			return err
		}
	}
	return nil
}

// discoverISOs lists the iso content of every storage that holds ISOs, once per node for local
// storages and once for shared ones (the same files on every node).
func (c *Client) discoverISOs(ctx context.Context, storages []Storage) ([]ISO, error) {
	byVol := map[string]*ISO{}
	for _, s := range storages {
		if !s.HasContent("iso") || len(s.Nodes) == 0 {
			continue
		}
		ask := s.Nodes
		if s.Shared {
			ask = s.Nodes[:1]
		}
		for _, node := range ask {
			var content []pve.StorageContent
			path := fmt.Sprintf("/nodes/%s/storage/%s/content?content=iso", url.PathEscape(node), url.PathEscape(s.Name))
			if err := c.Get(ctx, path, &content); err != nil {
				return nil, err
			}
			for _, f := range content {
				key := f.Volid + "@" + node
				if s.Shared {
					key = f.Volid
				}
				iso, ok := byVol[key]
				if !ok {
					iso = &ISO{VolID: f.Volid, Storage: s.Name, Size: f.Size}
					byVol[key] = iso
				}
				if s.Shared {
					iso.Nodes = s.Nodes
				} else {
					iso.Nodes = append(iso.Nodes, node)
				}
			}
		}
	}
	out := make([]ISO, 0, len(byVol))
	for _, iso := range byVol {
		out = append(out, *iso)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].VolID != out[j].VolID {
			return out[i].VolID < out[j].VolID
		}
		return strings.Join(out[i].Nodes, ",") < strings.Join(out[j].Nodes, ",")
	})
	return out, nil
}

func splitList(s string) []string {
	out := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
	sort.Strings(out)
	return out
}
