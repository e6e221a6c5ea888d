package pve

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// volume is a VM image (disk, EFI vars, TPM state, cloud-init drive) on a storage. Images
// are bookkeeping only — the sandbox runs no QEMU, so it never writes their bytes — and are
// listed as "images" content alongside real files.
type volume struct {
	VolID  string `json:"volid"`
	Node   string `json:"node,omitempty"` // owning node; "" on a shared storage
	VMID   int    `json:"vmid"`
	Size   int64  `json:"size"`
	Format string `json:"format"`
	// Parent is the base volume of a linked clone ("base-100-disk-0@__base__").
	Parent string `json:"parent,omitempty"`
	CTime  int64  `json:"ctime"`
}

func (v *volume) storage() string { return volumeStorage(v.VolID) }

func (v *volume) contentItem() map[string]any {
	item := map[string]any{
		"volid":   v.VolID,
		"content": "images",
		"format":  v.Format,
		"size":    v.Size,
		"used":    v.Size,
		"vmid":    v.VMID,
		"ctime":   v.CTime,
	}
	if v.Parent != "" {
		item["parent"] = v.Parent
	}
	return item
}

// path is where PVE would have the volume on the node.
func (v *volume) path(s *StorageConfig) string {
	_, name, _ := strings.Cut(v.VolID, ":")
	if s.fileBased() {
		return filepath.Join(s.Path, "images", name)
	}
	return "/dev/pve/" + name[strings.LastIndex(name, "/")+1:]
}

// imageName is the volume's file name part, e.g. "vm-101-disk-0" of
// "local:101/vm-101-disk-0.qcow2" or of "local-lvm:base-100-disk-0/vm-101-disk-0".
func imageName(volid string) string {
	_, name, _ := strings.Cut(volid, ":")
	name = name[strings.LastIndex(name, "/")+1:]
	return strings.TrimSuffix(name, filepath.Ext(name))
}

// newVolumeID names a new image of vmid on storage s: "<kind>-<vmid>-disk-<n>" with the
// lowest free n (or "vm-<vmid>-cloudinit"), laid out as PVE's plugin for the storage type
// does. taken tells names already used, including those planned but not yet committed.
func newVolumeID(s *StorageConfig, vmid int, cloudinit bool, format string, parent string, taken func(name string) bool) string {
	name := fmt.Sprintf("vm-%d-cloudinit", vmid)
	if !cloudinit {
		for n := 0; ; n++ {
			name = fmt.Sprintf("vm-%d-disk-%d", vmid, n)
			if !taken(name) && !taken(fmt.Sprintf("base-%d-disk-%d", vmid, n)) {
				break
			}
		}
	}
	if !s.fileBased() {
		if parent != "" {
			return fmt.Sprintf("%s:%s/%s", s.Name, parent, name)
		}
		return s.Name + ":" + name
	}
	file := fmt.Sprintf("%d/%s.%s", vmid, name, format)
	if parent != "" {
		return fmt.Sprintf("%s:%s/%s", s.Name, parent, file)
	}
	return s.Name + ":" + file
}

// takenNames reports image names in use on a storage (as seen from node) by committed
// volumes or by the extra volumes of a pending change.
func (c *Cluster) takenNames(s *StorageConfig, node string, extra []*volume) func(string) bool {
	return func(name string) bool {
		check := func(v *volume) bool {
			return v.storage() == s.Name && (s.Shared || v.Node == node) && imageName(v.VolID) == name
		}
		for _, v := range c.volumes {
			if check(v) {
				return true
			}
		}
		for _, v := range extra {
			if check(v) {
				return true
			}
		}
		return false
	}
}

func newVolume(s *StorageConfig, volid, node string, vmid int, size int64, format string) *volume {
	v := &volume{VolID: volid, VMID: vmid, Size: size, Format: format, CTime: time.Now().Unix()}
	if !s.Shared {
		v.Node = node
	}
	return v
}

// formatSize renders bytes as PVE's size= does: the largest unit that divides exactly.
func formatSize(b int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if b >= u.size && b%u.size == 0 {
			return fmt.Sprintf("%d%s", b/u.size, u.suffix)
		}
	}
	return fmt.Sprint(b)
}
