package pve

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// snapshotRoutes serve what an operator does to a VM in PVE's own UI that Horizon must tell
// apart from drift: snapshots (which change the config digest, as in PVE) and migrations to
// another node of the cluster.
func (c *Cluster) snapshotRoutes() []route {
	return []route{
		{method: "GET", pattern: "/nodes/{node}/qemu/{vmid}/snapshot", handle: c.listSnapshots},
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/snapshot", params: []string{"snapname", "description", "vmstate"}, handle: c.createSnapshot},
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback", params: []string{"start"}, handle: c.rollbackSnapshot},
		{method: "DELETE", pattern: "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}", params: []string{"force"}, handle: c.deleteSnapshot},
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/migrate", handle: c.migrateVM,
			params: []string{"target", "online", "with-local-disks", "force", "bwlimit", "migration_network", "migration_type", "targetstorage", "with-conntrack-state"}},
	}
}

// snapnameRE is PVE's pve-configid format of a snapshot name.
var snapnameRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_\-]{1,39}$`)

// listSnapshots answers the snapshots and the "current" pseudo-entry, as PVE does.
func (c *Cluster) listSnapshots(k *call) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.lookupVM(k)
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, name := range sortedKeys(v.Snapshots) {
		s := v.Snapshots[name]
		item := map[string]any{"name": name, "description": s["description"], "snaptime": s["snaptime"]}
		if p := s["parent"]; p != "" {
			item["parent"] = p
		}
		out = append(out, item)
	}
	current := map[string]any{"name": "current", "description": "You are here!", "running": boolInt(v.Running)}
	if p := v.Conf["parent"]; p != "" {
		current["parent"] = p
	}
	return append(out, current), nil
}

// createSnapshot records a [snapname] section holding the current config and makes it the
// config's parent, in a qmsnapshot task: both are written to the VM's config file, so the
// digest changes while none of the VM's settings does (what PVE does; drift checks must not
// mistake it for a change).
func (c *Cluster) createSnapshot(k *call) (any, error) {
	name := k.p.pattern("snapname", snapnameRE)
	k.p.bool("vmstate", false)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, paramErr("snapname", "property is missing and it is not optional")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.lookupVM(k)
	if err != nil {
		return nil, err
	}
	if _, ok := v.Snapshots[name]; ok || name == "current" {
		return nil, failf("snapshot name '%s' already used", name)
	}
	if l := v.Conf["lock"]; l != "" {
		return nil, failf("VM is locked (%s)", l)
	}
	v.Conf["lock"] = "snapshot"
	desc := k.p.str("description")
	return c.startTask(v.Node, "qmsnapshot", vmidString(v.VMID), k.user, nil, func(t *task) error {
		delete(v.Conf, "lock")
		if c.vms[v.VMID] != v {
			return fmt.Errorf("VM %d does not exist any more", v.VMID)
		}
		snap := copyMap(v.Conf)
		snap["snaptime"] = fmt.Sprint(time.Now().Unix())
		if desc != "" {
			snap["description"] = desc
		} else {
			delete(snap, "description")
		}
		if v.Snapshots == nil {
			v.Snapshots = map[string]map[string]string{}
		}
		v.Snapshots[name] = snap
		v.Conf["parent"] = name
		t.logf("snapshotting '%s'", name)
		return nil
	}), nil
}

// rollbackSnapshot puts the VM's config back as it was at the snapshot, in a qmrollback task,
// as PVE does (PVE::AbstractConfig::snapshot_rollback): a running VM is stopped first (the
// sandbox takes no RAM state, so it stays stopped unless start=1); the current notes
// (description) and unused disks are kept; the config's parent becomes the snapshot; the
// disks go back to their sizes at the snapshot. Settings changed since the snapshot revert,
// so drift checks see exactly the keys that differ from what Horizon set.
func (c *Cluster) rollbackSnapshot(k *call) (any, error) {
	name := k.vars["snapname"]
	start := k.p.bool("start", false)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	return c.snapshotTask(k, name, "rollback", "qmrollback", func(t *task, v *vm, snap map[string]string) error {
		if err := c.stopVM(v, t); err != nil {
			return err
		}
		conf := copyMap(snap)
		delete(conf, "snaptime")
		delete(conf, "description") // the snapshot's own comment, not the VM's notes
		for key, val := range v.Conf {
			if key == "description" || unusedKeyRE.MatchString(key) {
				conf[key] = val
			}
		}
		conf["parent"] = name
		for key, val := range conf {
			if !isDriveKey(key) {
				continue
			}
			d, err := parseDrive(val)
			if err != nil {
				continue
			}
			if vol := c.volumes[volumeOf(val)]; vol != nil {
				if size, ok := parseSize(d.opts["size"]); ok {
					vol.Size = size
				}
			}
		}
		v.Conf = conf
		t.logf("rollback to snapshot '%s'", name)
		if start {
			return c.startVM(v, t)
		}
		return nil
	})
}

// deleteSnapshot removes a snapshot's section in a qmdelsnapshot task, as PVE does: the
// snapshots (and the config) whose parent it was take its parent.
func (c *Cluster) deleteSnapshot(k *call) (any, error) {
	name := k.vars["snapname"]
	k.p.bool("force", false)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	return c.snapshotTask(k, name, "snapshot-delete", "qmdelsnapshot", func(t *task, v *vm, snap map[string]string) error {
		reparent := func(m map[string]string) {
			if m["parent"] != name {
				return
			}
			if p := snap["parent"]; p != "" {
				m["parent"] = p
			} else {
				delete(m, "parent")
			}
		}
		delete(v.Snapshots, name)
		for _, other := range v.Snapshots {
			reparent(other)
		}
		reparent(v.Conf)
		t.logf("delete snapshot '%s'", name)
		return nil
	})
}

// snapshotTask runs change on an existing snapshot of the call's VM in a task of type typ,
// the VM locked (lock) from the call until the task runs, as PVE does: a locked VM or an
// unknown snapshot is refused at once, and both are checked again when the task runs.
func (c *Cluster) snapshotTask(k *call, name, lock, typ string, change func(t *task, v *vm, snap map[string]string) error) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.lookupVM(k)
	if err != nil {
		return nil, err
	}
	if _, ok := v.Snapshots[name]; !ok {
		return nil, failf("snapshot '%s' does not exist", name)
	}
	if l := v.Conf["lock"]; l != "" {
		return nil, failf("VM is locked (%s)", l)
	}
	v.Conf["lock"] = lock
	return c.startTask(v.Node, typ, vmidString(v.VMID), k.user, nil, func(t *task) error {
		delete(v.Conf, "lock")
		if c.vms[v.VMID] != v {
			return fmt.Errorf("VM %d does not exist any more", v.VMID)
		}
		snap, ok := v.Snapshots[name]
		if !ok {
			return fmt.Errorf("snapshot '%s' does not exist", name)
		}
		return change(t, v, snap)
	}), nil
}

// unusedKeyRE matches the unusedN keys a rollback keeps.
var unusedKeyRE = regexp.MustCompile(`^unused\d+$`)

// parseSize reads a size= value ("32G", "512M", bytes) as bytes.
func parseSize(s string) (int64, bool) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil || m[1] != "" {
		return 0, false
	}
	n, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return 0, false
	}
	return int64(n * float64(map[string]int64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[3]])), true
}

// migrateVM moves a VM to another node of the cluster in a qmigrate task on the source node.
// As in PVE, a running VM needs online=1 and local disks need with-local-disks=1; the VM is
// locked "migrate" while the task runs.
func (c *Cluster) migrateVM(k *call) (any, error) {
	target := k.p.required("target")
	online := k.p.bool("online", false)
	withLocal := k.p.bool("with-local-disks", false)
	k.p.bool("force", false)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.lookupVM(k)
	if err != nil {
		return nil, err
	}
	dst := c.Node(target)
	switch {
	case dst == nil:
		return nil, paramErr("target", "no such cluster node '%s'", target)
	case target == v.Node:
		return nil, failf("target is local node.")
	case !dst.Online():
		return nil, failf("target node '%s' is not online", target)
	case v.Conf["lock"] != "":
		return nil, failf("VM is locked (%s)", v.Conf["lock"])
	case v.Running && !online:
		return nil, failf("can't migrate running VM without --online")
	}
	for _, key := range sortedKeys(v.Conf) {
		if vol := c.volumes[volumeOf(v.Conf[key])]; isDriveKey(key) && vol != nil && vol.Node != "" && !withLocal {
			return nil, failf("can't migrate local disk '%s': use --with-local-disks", vol.VolID)
		}
	}
	v.Conf["lock"] = "migrate"
	src := v.Node
	return c.startTask(src, "qmigrate", vmidString(v.VMID), k.user, nil, func(t *task) error {
		delete(v.Conf, "lock")
		if c.vms[v.VMID] != v {
			return fmt.Errorf("VM %d does not exist any more", v.VMID)
		}
		for _, vol := range c.volumes {
			if vol.VMID == v.VMID && vol.Node == src {
				vol.Node = target
			}
		}
		v.Node = target
		t.logf("migration finished successfully (duration 00:00:01)")
		return nil
	}), nil
}
