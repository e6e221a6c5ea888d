package pve

import (
	"fmt"
	"time"
)

func (c *Cluster) statusRoutes() []route {
	return []route{
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/status/start", handle: c.powerAction("qmstart", c.startVM),
			params: []string{"force-cpu", "machine", "migratedfrom", "migration_network", "migration_type", "skiplock", "stateuri", "targetstorage", "timeout"}},
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/status/stop", handle: c.powerAction("qmstop", c.stopVM),
			params: []string{"keepActive", "migratedfrom", "overrule-shutdown", "skiplock", "timeout"}},
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/status/shutdown", handle: c.powerAction("qmshutdown", c.shutdownVM),
			params: []string{"forceStop", "keepActive", "skiplock", "timeout"}},
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/status/reboot", handle: c.powerAction("qmreboot", c.rebootVM),
			params: []string{"timeout"}},
	}
}

// powerAction answers a status/* call with a task that runs act when it ends. The
// parameters (timeouts, migration options) are accepted and have no effect.
func (c *Cluster) powerAction(taskType string, act func(v *vm, t *task) error) func(*call) (any, error) {
	return func(k *call) (any, error) {
		skiplock := k.p.bool("skiplock", false)
		k.p.int("timeout", 0, 0)
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
		return c.startTask(v.Node, taskType, vmidString(v.VMID), k.user, nil, func(t *task) error {
			if c.vms[v.VMID] != v {
				return fmt.Errorf("VM %d does not exist any more", v.VMID)
			}
			return act(v, t)
		}), nil
	}
}

// startVM powers the VM on: cloud-init is read and the VM's SSH server starts. The caller
// holds c.mu.
func (c *Cluster) startVM(v *vm, t *task) error {
	if v.isTemplate() {
		return fmt.Errorf("you can't start a vm if it's a template")
	}
	if v.Running {
		return fmt.Errorf("VM %d already running", v.VMID)
	}
	if err := c.startVMSSH(v); err != nil {
		return err
	}
	if v.ssh != nil {
		t.logf("sandbox: VM %d serves SSH on %s", v.VMID, v.ssh.addr())
	}
	v.Running, v.Started = true, time.Now()
	return nil
}

func (c *Cluster) stopVM(v *vm, t *task) error {
	if !v.Running {
		return nil // qm stop of a stopped VM is a no-op
	}
	c.stopVMSSH(v)
	v.Running = false
	return nil
}

func (c *Cluster) shutdownVM(v *vm, t *task) error {
	if !v.Running {
		return fmt.Errorf("VM %d not running", v.VMID)
	}
	return c.stopVM(v, t)
}

func (c *Cluster) rebootVM(v *vm, t *task) error {
	if !v.Running {
		return fmt.Errorf("VM %d not running", v.VMID)
	}
	c.stopVMSSH(v)
	v.Running = false
	return c.startVM(v, t)
}
