package pve

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// pool is a resource pool: VMs and storages grouped for permissions.
type pool struct {
	ID       string   `json:"poolid"`
	Comment  string   `json:"comment,omitempty"`
	VMs      []int    `json:"vms,omitempty"`
	Storages []string `json:"storages,omitempty"`
}

// poolIDRE is pve-poolid (nested pools use '/').
var poolIDRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_\-.]*(/[A-Za-z0-9_][A-Za-z0-9_\-.]*){0,2}$`)

func (c *Cluster) poolRoutes() []route {
	return []route{
		{method: "GET", pattern: "/pools", params: []string{"poolid", "type"}, handle: c.listPools},
		{method: "POST", pattern: "/pools", params: []string{"poolid", "comment"}, handle: c.createPool},
		{method: "PUT", pattern: "/pools", params: []string{"poolid", "comment", "vms", "storage", "delete", "allow-move"}, handle: c.updatePool},
		{method: "DELETE", pattern: "/pools", params: []string{"poolid"}, handle: c.deletePool},
	}
}

// poolOf returns the pool the VM belongs to, or "". The caller holds c.mu.
func (c *Cluster) poolOf(vmid int) string {
	for _, id := range sortedKeys(c.pools) {
		if slices.Contains(c.pools[id].VMs, vmid) {
			return id
		}
	}
	return ""
}

func (c *Cluster) listPools(k *call) (any, error) {
	id := k.p.pattern("poolid", poolIDRE)
	typ := k.p.enum("type", "qemu", "lxc", "storage")
	if typ != "" && id == "" {
		k.p.fail("type", "property 'type' requires 'poolid'")
	}
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == "" {
		out := []map[string]any{}
		for _, pid := range sortedKeys(c.pools) {
			if !k.may("/pool/"+pid, "Pool.Audit") {
				continue
			}
			item := map[string]any{"poolid": pid}
			if cm := c.pools[pid].Comment; cm != "" {
				item["comment"] = cm
			}
			out = append(out, item)
		}
		return out, nil
	}
	if !k.may("/pool/"+id, "Pool.Audit") {
		return nil, permissionDenied("/pool/"+id, "Pool.Audit")
	}
	p := c.pools[id]
	if p == nil {
		return nil, failf("pool '%s' does not exist", id)
	}
	members := []map[string]any{}
	if typ == "" || typ == "qemu" {
		for _, vmid := range p.VMs {
			if v := c.vms[vmid]; v != nil {
				members = append(members, c.vmResource(v))
			}
		}
	}
	if typ == "" || typ == "storage" {
		for _, sid := range p.Storages {
			s := c.storage(sid)
			for _, n := range c.nodes {
				if s != nil && storageOnNode(s, n.cfg.Name) {
					members = append(members, c.storageResource(s, n))
				}
			}
		}
	}
	item := map[string]any{"poolid": id, "members": members}
	if p.Comment != "" {
		item["comment"] = p.Comment
	}
	return []map[string]any{item}, nil
}

func (c *Cluster) createPool(k *call) (any, error) {
	id := k.p.required("poolid")
	k.p.pattern("poolid", poolIDRE)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pools[id] != nil {
		return nil, failf("pool '%s' already exists", id)
	}
	c.pools[id] = &pool{ID: id, Comment: k.p.str("comment")}
	c.saveLocked()
	return nil, nil
}

// updatePool is PUT /pools: add (or, with delete=1, remove) VMs and storages, or change the
// comment. A VM in another pool moves only with allow-move=1.
func (c *Cluster) updatePool(k *call) (any, error) {
	p := k.p
	id := p.required("poolid")
	remove := p.bool("delete", false)
	allowMove := p.bool("allow-move", false)
	var vmids []int
	for _, s := range splitList(p.str("vms")) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			p.fail("vms", "invalid format - value '%s' does not look like a valid VM ID", s)
			continue
		}
		vmids = append(vmids, n)
	}
	storages := splitList(p.str("storage"))
	if err := p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pl := c.pools[id]
	if pl == nil {
		return nil, failf("pool '%s' does not exist", id)
	}
	for _, vmid := range vmids {
		if c.vms[vmid] == nil && !remove {
			return nil, failf("VM %d does not exist", vmid)
		}
		other := c.poolOf(vmid)
		switch {
		case remove:
			pl.VMs = slices.DeleteFunc(pl.VMs, func(n int) bool { return n == vmid })
		case other == id:
		case other != "" && !allowMove:
			return nil, failf("VM %d is already a pool member", vmid)
		default:
			if other != "" {
				o := c.pools[other]
				o.VMs = slices.DeleteFunc(o.VMs, func(n int) bool { return n == vmid })
			}
			pl.VMs = append(pl.VMs, vmid)
		}
	}
	for _, sid := range storages {
		if c.storage(sid) == nil {
			return nil, failf("storage '%s' does not exist", sid)
		}
		if remove {
			pl.Storages = slices.DeleteFunc(pl.Storages, func(s string) bool { return s == sid })
		} else if !slices.Contains(pl.Storages, sid) {
			pl.Storages = append(pl.Storages, sid)
		}
	}
	if p.has("comment") {
		pl.Comment = p.str("comment")
	}
	c.saveLocked()
	return nil, nil
}

func (c *Cluster) deletePool(k *call) (any, error) {
	id := k.p.required("poolid")
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pl := c.pools[id]
	if pl == nil {
		return nil, failf("pool '%s' does not exist", id)
	}
	if len(pl.VMs) > 0 || len(pl.Storages) > 0 {
		return nil, failf("pool '%s' is not empty", id)
	}
	if slices.ContainsFunc(sortedKeys(c.pools), func(o string) bool { return strings.HasPrefix(o, id+"/") }) {
		return nil, failf("pool '%s' has sub-pools", id)
	}
	delete(c.pools, id)
	c.saveLocked()
	return nil, nil
}
