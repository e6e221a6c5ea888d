package pve

import (
	"fmt"
	"regexp"
	"time"
)

// snapshotRoutes serve what an operator does to a VM in PVE's own UI that Horizon must tell
// apart from drift: snapshots (which change the config digest, as in PVE) and migrations to
// another node of the cluster.
func (c *Cluster) snapshotRoutes() []route {
	return []route{
		{method: "GET", pattern: "/nodes/{node}/qemu/{vmid}/snapshot", handle: c.listSnapshots},
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/snapshot", params: []string{"snapname", "description", "vmstate"}, handle: c.createSnapshot},
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
