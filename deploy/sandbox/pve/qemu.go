package pve

import (
	"fmt"
	"os"
	"slices"
	"strconv"
)

func (c *Cluster) qemuRoutes() []route {
	keys := vmKeyNames()
	return []route{
		{method: "GET", pattern: "/nodes/{node}/qemu", params: []string{"full"}, handle: c.listVMs},
		{method: "POST", pattern: "/nodes/{node}/qemu", params: append([]string{"vmid", "pool", "start"}, keys...), handle: c.createVM},
		{method: "GET", pattern: "/nodes/{node}/qemu/{vmid}/config", params: []string{"current", "snapshot"}, handle: c.getConfig},
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/config", params: append([]string{"delete", "digest"}, keys...), handle: c.postConfig},
		{method: "PUT", pattern: "/nodes/{node}/qemu/{vmid}/config", params: append([]string{"delete", "digest"}, keys...), handle: c.putConfig},
		{method: "DELETE", pattern: "/nodes/{node}/qemu/{vmid}", params: []string{"destroy-unreferenced-disks", "purge", "skiplock"}, handle: c.deleteVM},
		{method: "GET", pattern: "/nodes/{node}/qemu/{vmid}/status/current", handle: c.statusCurrent},
	}
}

// lookupVM resolves {vmid} on {node}; the caller holds c.mu. A VM on another node does not
// exist at this path, as in PVE.
func (c *Cluster) lookupVM(k *call) (*vm, error) {
	node := k.vars["node"]
	vmid, err := strconv.Atoi(k.vars["vmid"])
	if err != nil || vmid < 100 {
		return nil, paramErr("vmid", "type check ('integer') failed - got '%s'", k.vars["vmid"])
	}
	v := c.vms[vmid]
	if v == nil || v.Node != node {
		return nil, failf("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", node, vmid)
	}
	return v, nil
}

func (c *Cluster) listVMs(k *call) (any, error) {
	full := k.p.bool("full", false)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []map[string]any{}
	for _, vmid := range c.sortedVMIDs() {
		v := c.vms[vmid]
		if v.Node != k.vars["node"] || !k.may(vmPath(vmid), "VM.Audit") {
			continue
		}
		s := c.vmStatus(v)
		if full {
			s["qmpstatus"] = v.status()
		}
		out = append(out, s)
	}
	return out, nil
}

func (c *Cluster) sortedVMIDs() []int {
	ids := make([]int, 0, len(c.vms))
	for id := range c.vms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (c *Cluster) createVM(k *call) (any, error) {
	p := k.p
	vmid := p.int("vmid", 0, 100)
	p.required("vmid")
	poolID := p.str("pool")
	start := p.bool("start", false)
	if vmid > 999999999 {
		p.fail("vmid", "value must have a maximum value of 999999999")
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	node := k.vars["node"]
	c.mu.Lock()
	defer c.mu.Unlock()
	if other := c.vms[vmid]; other != nil {
		return nil, failf("VM %d already exists on node '%s'", vmid, other.Node)
	}
	if poolID != "" && c.pools[poolID] == nil {
		return nil, failf("pool '%s' does not exist", poolID)
	}
	v := &vm{VMID: vmid, Node: node, Conf: map[string]string{}}
	ch, err := c.planConfig(v, p, true)
	if err != nil {
		return nil, err
	}
	if err := k.mayCreate(vmid, poolID, ch); err != nil {
		return nil, err
	}
	creationDefaults(ch.conf)
	if err := c.addVM(v, ch, "create", poolID); err != nil {
		return nil, err
	}
	return c.startTask(node, "qmcreate", vmidString(vmid), k.user, nil, func(t *task) error {
		if c.vms[vmid] != v {
			return fmt.Errorf("VM %d vanished during creation", vmid)
		}
		delete(v.Conf, "lock")
		for _, vol := range ch.add {
			t.logf("  Logical volume \"%s\" created.", imageName(vol.VolID))
		}
		if start {
			return c.startVM(v, t)
		}
		return nil
	}), nil
}

// addVM registers a new VM with its planned config and its directory. Like qm create and
// qm clone, the config exists at once, locked until the task ends, so the VMID is taken from
// the first moment. The caller holds c.mu.
func (c *Cluster) addVM(v *vm, ch *configChange, lock, poolID string) error {
	if err := os.MkdirAll(c.VMDir(v.VMID), 0o755); err != nil {
		return failf("create VM directory: %s", err.Error())
	}
	ch.conf["lock"] = lock
	if err := c.commit(v, ch); err != nil {
		return failf("%s", err.Error())
	}
	c.vms[v.VMID] = v
	if poolID != "" {
		c.pools[poolID].VMs = append(c.pools[poolID].VMs, v.VMID)
	}
	c.saveLocked()
	return nil
}

func (c *Cluster) getConfig(k *call) (any, error) {
	k.p.bool("current", false)
	if k.p.str("snapshot") != "" {
		return nil, failf("snapshot '%s' does not exist", k.p.str("snapshot"))
	}
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.lookupVM(k)
	if err != nil {
		return nil, err
	}
	return renderConfig(v), nil
}

// planUpdate plans the config update a call asks for. The caller holds c.mu.
func (c *Cluster) planUpdate(k *call) (*vm, *configChange, error) {
	v, err := c.lookupVM(k)
	if err != nil {
		return nil, nil, err
	}
	ch, err := c.planConfig(v, k.p, false)
	return v, ch, err
}

// postConfig is the asynchronous config update: checked now, applied when its task ends.
func (c *Cluster) postConfig(k *call) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ch, err := c.planUpdate(k)
	if err != nil {
		return nil, err
	}
	return c.startTask(v.Node, "qmconfig", vmidString(v.VMID), k.user, nil, func(t *task) error {
		if c.vms[v.VMID] != v {
			return fmt.Errorf("VM %d does not exist any more", v.VMID)
		}
		for key := range ch.conf {
			if ch.conf[key] != v.Conf[key] {
				t.logf("update VM %d: -%s %s", v.VMID, key, ch.conf[key])
			}
		}
		return c.commit(v, ch)
	}), nil
}

// putConfig is the synchronous config update.
func (c *Cluster) putConfig(k *call) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ch, err := c.planUpdate(k)
	if err != nil {
		return nil, err
	}
	if err := c.commit(v, ch); err != nil {
		return nil, failf("%s", err.Error())
	}
	c.saveLocked()
	return nil, nil
}

func (c *Cluster) deleteVM(k *call) (any, error) {
	k.p.bool("purge", false)
	k.p.bool("destroy-unreferenced-disks", true)
	skiplock := k.p.bool("skiplock", false)
	if err := k.p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.lookupVM(k)
	if err != nil {
		return nil, err
	}
	if l := v.Conf["lock"]; l != "" && !skiplock {
		return nil, failf("VM is locked (%s)", l)
	}
	if v.Running {
		return nil, failf("VM %d is running - destroy failed", v.VMID)
	}
	if v.Conf["protection"] == "1" {
		return nil, failf("can't remove VM %d - protection mode enabled", v.VMID)
	}
	if base := c.baseInUse(v); base != "" {
		return nil, failf("base volume '%s' is still in use by linked cloned", base)
	}
	return c.startTask(v.Node, "qmdestroy", vmidString(v.VMID), k.user, nil, func(t *task) error {
		if c.vms[v.VMID] != v {
			return fmt.Errorf("VM %d does not exist any more", v.VMID)
		}
		c.destroyVM(v, t)
		return nil
	}), nil
}

// destroyVM removes the VM, its volumes, its pool membership and its directory.
func (c *Cluster) destroyVM(v *vm, t *task) {
	c.stopVMSSH(v)
	for _, volid := range sortedKeys(c.volumes) {
		if c.volumes[volid].VMID == v.VMID {
			delete(c.volumes, volid)
			t.logf("  Logical volume \"%s\" successfully removed.", imageName(volid))
		}
	}
	for _, p := range c.pools {
		p.VMs = slices.DeleteFunc(p.VMs, func(id int) bool { return id == v.VMID })
	}
	delete(c.vms, v.VMID)
	if err := os.RemoveAll(c.VMDir(v.VMID)); err != nil {
		t.logf("WARN: remove VM directory: %v", err)
	}
}

// baseInUse returns a base volume of v that a linked clone still uses, or "".
func (c *Cluster) baseInUse(v *vm) string {
	for _, vol := range c.volumes {
		if vol.Parent == "" || vol.VMID == v.VMID {
			continue
		}
		for volid, own := range c.volumes {
			if own.VMID == v.VMID && vol.Parent == imageName(volid)+"@__base__" {
				return volid
			}
		}
	}
	return ""
}

func (c *Cluster) statusCurrent(k *call) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.lookupVM(k)
	if err != nil {
		return nil, err
	}
	s := c.vmStatus(v)
	s["qmpstatus"] = v.status()
	s["ha"] = map[string]any{"managed": 0}
	if agent, err := parsePropertyString(v.Conf["agent"], "enabled"); err == nil {
		if on, _ := parseBool(agent["enabled"]); on {
			s["agent"] = 1
		}
	}
	if v.Running {
		s["running-machine"] = "pc-i440fx-9.2+pve1"
		s["running-qemu"] = "9.2.0"
		s["balloon"] = v.memoryBytes()
		s["freemem"] = v.memoryBytes() - v.memoryBytes()/4
		s["shares"] = 1000
		s["nics"] = map[string]any{}
	}
	return s, nil
}
