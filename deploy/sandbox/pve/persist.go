package pve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// inventory is what a cluster persists in its data directory: VMs, pools and image
// volumes. Files on storages are real files there already; tasks are not kept (a restarted
// node has no task history either).
type inventory struct {
	VMs     []*vm     `json:"vms"`
	Pools   []*pool   `json:"pools"`
	Volumes []*volume `json:"volumes"`
}

func (c *Cluster) inventoryPath() string { return filepath.Join(c.dir, "inventory.json") }

// load reads the inventory when the data directory has one; the configured pools are kept
// and merged with the persisted ones.
func (c *Cluster) load() error {
	if c.persistDir() == "" {
		return nil
	}
	data, err := os.ReadFile(c.inventoryPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var inv inventory
	if err := json.Unmarshal(data, &inv); err != nil {
		return fmt.Errorf("parse %s: %w", c.inventoryPath(), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range inv.VMs {
		if c.Node(v.Node) == nil {
			return fmt.Errorf("%s: VM %d is on unknown node %q", c.inventoryPath(), v.VMID, v.Node)
		}
		c.vms[v.VMID] = v
	}
	for _, p := range inv.Pools {
		c.pools[p.ID] = p
	}
	for _, vol := range inv.Volumes {
		c.volumes[vol.VolID] = vol
	}
	return nil
}

// save writes the inventory (when there is a data directory).
func (c *Cluster) save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeInventory()
}

// saveLocked is save for callers holding c.mu. A failure is logged: the change is made in
// memory and the next successful save persists it.
func (c *Cluster) saveLocked() {
	if err := c.writeInventory(); err != nil {
		c.sb.log.Error("sandbox: save inventory", "cluster", c.cfg.Name, "error", err)
	}
}

func (c *Cluster) writeInventory() error {
	if c.persistDir() == "" {
		return nil
	}
	inv := inventory{VMs: []*vm{}, Pools: []*pool{}, Volumes: []*volume{}}
	for _, id := range c.sortedVMIDs() {
		inv.VMs = append(inv.VMs, c.vms[id])
	}
	for _, id := range sortedKeys(c.pools) {
		inv.Pools = append(inv.Pools, c.pools[id])
	}
	for _, id := range sortedKeys(c.volumes) {
		inv.Volumes = append(inv.Volumes, c.volumes[id])
	}
	data, err := json.MarshalIndent(inv, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(c.inventoryPath(), data, 0o644)
}
