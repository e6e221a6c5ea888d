package pve

import (
	"fmt"
	"time"
)

// pveVersion is the PVE release the sandbox imitates (the schema it is checked against).
const (
	pveRelease = "9.1"
	pveVersion = "9.1.2"
	pveRepoID  = "d0a5c6f8e4b2a1c9"
)

func (c *Cluster) clusterRoutes() []route {
	return []route{
		{method: "GET", pattern: "/version", handle: c.version},
		{method: "GET", pattern: "/nodes", handle: c.listNodes},
		{method: "GET", pattern: "/nodes/{node}/status", handle: c.nodeStatus},
		{method: "GET", pattern: "/cluster/status", handle: c.clusterStatus},
		{method: "GET", pattern: "/cluster/resources", params: []string{"type"}, handle: c.resources},
		{method: "GET", pattern: "/cluster/nextid", params: []string{"vmid"}, handle: c.nextID},
	}
}

func (c *Cluster) version(*call) (any, error) {
	return map[string]any{"release": pveRelease, "version": pveVersion, "repoid": pveRepoID, "console": "xtermjs"}, nil
}

// nodeUsage is the load the sandbox reports for a node: memory of its running VMs.
func (c *Cluster) nodeUsage(n *Node) (mem int64) {
	for _, v := range c.vms {
		if v.Node == n.cfg.Name && v.Running {
			mem += v.memoryBytes() / 4
		}
	}
	return mem + 2<<30
}

func (c *Cluster) listNodes(*call) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []map[string]any{}
	for _, n := range c.nodes {
		item := map[string]any{
			"node":   n.cfg.Name,
			"id":     "node/" + n.cfg.Name,
			"type":   "node",
			"status": "offline",
			"level":  "",
		}
		if n.Online() {
			item["status"] = "online"
			item["cpu"] = 0.02
			item["maxcpu"] = n.cfg.CPUs
			item["mem"] = c.nodeUsage(n)
			item["maxmem"] = int64(n.cfg.MemoryMiB) << 20
			item["disk"] = 4 * gib
			item["maxdisk"] = 100 * gib
			item["uptime"] = int64(time.Since(n.boot).Seconds())
			item["ssl_fingerprint"] = c.CertFingerprint()
		}
		out = append(out, item)
	}
	return out, nil
}

func (c *Cluster) nodeStatus(k *call) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.Node(k.vars["node"])
	total := int64(n.cfg.MemoryMiB) << 20
	used := c.nodeUsage(n)
	return map[string]any{
		"cpu":        0.02,
		"wait":       0,
		"idle":       0,
		"uptime":     int64(time.Since(n.boot).Seconds()),
		"loadavg":    []string{"0.10", "0.15", "0.20"},
		"kversion":   "Linux 6.14.8-2-pve #1 SMP PREEMPT_DYNAMIC PMX 6.14.8-2 (2025-07-22T10:04Z) x86_64",
		"pveversion": fmt.Sprintf("pve-manager/%s/%s", pveVersion, pveRepoID),
		"cpuinfo": map[string]any{
			"model": "Sandbox Virtual CPU", "cores": n.cfg.CPUs, "cpus": n.cfg.CPUs, "sockets": 1,
			"mhz": "2400.000", "hvm": "1", "user_hz": 100, "flags": "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge",
		},
		"memory":    map[string]any{"total": total, "used": used, "free": total - used, "available": total - used},
		"swap":      map[string]any{"total": 0, "used": 0, "free": 0},
		"rootfs":    map[string]any{"total": 100 * gib, "used": 4 * gib, "free": 96 * gib, "avail": 96 * gib},
		"ksm":       map[string]any{"shared": 0},
		"boot-info": map[string]any{"mode": "efi", "secureboot": 0},
		"current-kernel": map[string]any{
			"sysname": "Linux", "release": "6.14.8-2-pve", "machine": "x86_64",
			"version": "#1 SMP PREEMPT_DYNAMIC PMX 6.14.8-2 (2025-07-22T10:04Z)",
		},
	}, nil
}

func (c *Cluster) clusterStatus(*call) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	online := 0
	var nodes []map[string]any
	for i, n := range c.nodes {
		on := n.Online()
		if on {
			online++
		}
		nodes = append(nodes, map[string]any{
			"type":   "node",
			"id":     "node/" + n.cfg.Name,
			"name":   n.cfg.Name,
			"nodeid": i + 1,
			"ip":     "127.0.0.1",
			"online": boolInt(on),
			"local":  boolInt(i == 0),
			"level":  "",
		})
	}
	out := []map[string]any{{
		"type":    "cluster",
		"id":      "cluster",
		"name":    c.cfg.Name,
		"nodes":   len(c.nodes),
		"quorate": boolInt(online*2 > len(c.nodes)),
		"version": len(c.nodes),
	}}
	return append(out, nodes...), nil
}

func (c *Cluster) resources(k *call) (any, error) {
	typ := k.p.enum("type", "vm", "storage", "node", "sdn")
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []map[string]any{}
	if typ == "" || typ == "vm" {
		for _, vmid := range c.sortedVMIDs() {
			if k.may(vmPath(vmid), "VM.Audit") {
				out = append(out, c.vmResource(c.vms[vmid]))
			}
		}
	}
	if typ == "" || typ == "node" {
		for _, n := range c.nodes {
			out = append(out, c.nodeResource(n))
		}
	}
	if typ == "" || typ == "storage" {
		for _, n := range c.nodes {
			for i := range c.cfg.Storages {
				if s := &c.cfg.Storages[i]; storageOnNode(s, n.cfg.Name) && k.may("/storage/"+s.Name, "Datastore.Audit", "Datastore.AllocateSpace") {
					out = append(out, c.storageResource(s, n))
				}
			}
		}
	}
	if typ == "" {
		for _, id := range sortedKeys(c.pools) {
			if k.may("/pool/"+id, "Pool.Audit") {
				out = append(out, map[string]any{"id": "/pool/" + id, "type": "pool", "pool": id})
			}
		}
	}
	return out, nil
}

// vmResource is a VM as /cluster/resources and pool members list it.
func (c *Cluster) vmResource(v *vm) map[string]any {
	s := c.vmStatus(v)
	r := map[string]any{
		"id":        fmt.Sprintf("qemu/%d", v.VMID),
		"type":      "qemu",
		"vmid":      v.VMID,
		"name":      s["name"],
		"node":      v.Node,
		"status":    v.status(),
		"template":  boolInt(v.isTemplate()),
		"maxcpu":    v.cpus(),
		"maxmem":    s["maxmem"],
		"maxdisk":   s["maxdisk"],
		"mem":       s["mem"],
		"memhost":   s["mem"],
		"disk":      0,
		"cpu":       s["cpu"],
		"uptime":    s["uptime"],
		"netin":     0,
		"netout":    0,
		"diskread":  0,
		"diskwrite": 0,
	}
	if n := c.Node(v.Node); n != nil && !n.Online() {
		r["status"] = "unknown"
	}
	for _, key := range []string{"tags", "lock"} {
		if val, ok := s[key]; ok {
			r[key] = val
		}
	}
	if p := c.poolOf(v.VMID); p != "" {
		r["pool"] = p
	}
	return r
}

func (c *Cluster) nodeResource(n *Node) map[string]any {
	r := map[string]any{
		"id":          "node/" + n.cfg.Name,
		"type":        "node",
		"node":        n.cfg.Name,
		"status":      "offline",
		"level":       "",
		"cgroup-mode": 2,
		"maxcpu":      n.cfg.CPUs,
		"maxmem":      int64(n.cfg.MemoryMiB) << 20,
		"maxdisk":     100 * gib,
	}
	if n.Online() {
		r["status"] = "online"
		r["cpu"] = 0.02
		r["mem"] = c.nodeUsage(n)
		r["disk"] = 4 * gib
		r["uptime"] = int64(time.Since(n.boot).Seconds())
	}
	return r
}

func (c *Cluster) storageResource(s *StorageConfig, n *Node) map[string]any {
	status := "available"
	if !n.Online() {
		status = "unknown"
	}
	return map[string]any{
		"id":         fmt.Sprintf("storage/%s/%s", n.cfg.Name, s.Name),
		"type":       "storage",
		"storage":    s.Name,
		"node":       n.cfg.Name,
		"status":     status,
		"plugintype": s.Type,
		"content":    contentList(s),
		"shared":     boolInt(s.Shared),
		"disk":       c.storageUsed(s, n.cfg.Name),
		"maxdisk":    int64(s.TotalGiB) * gib,
	}
}

// nextID answers the lowest free VMID ≥ 100, as a string as PVE does. With vmid it checks
// that one: free, it is returned; taken, 400. Nothing is reserved.
func (c *Cluster) nextID(k *call) (any, error) {
	want := k.p.int("vmid", 0, 100)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if want != 0 {
		if c.vms[want] != nil {
			return nil, paramErr("vmid", "VM %d already exists", want)
		}
		return fmt.Sprint(want), nil
	}
	for id := 100; ; id++ {
		if c.vms[id] == nil {
			return fmt.Sprint(id), nil
		}
	}
}
