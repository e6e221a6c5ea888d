package pve

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func (c *Cluster) cloneRoutes() []route {
	return []route{
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/template", params: []string{"disk"}, handle: c.convertToTemplate},
		{method: "POST", pattern: "/nodes/{node}/qemu/{vmid}/clone", handle: c.cloneVM,
			params: []string{"bwlimit", "description", "format", "full", "name", "newid", "pool", "snapname", "storage", "target"}},
		{method: "PUT", pattern: "/nodes/{node}/qemu/{vmid}/resize", params: []string{"digest", "disk", "size", "skiplock"}, handle: c.resize},
	}
}

// convertToTemplate turns a stopped VM into a template; its disks become base images
// (vm-100-disk-0 → base-100-disk-0), which linked clones then use.
func (c *Cluster) convertToTemplate(k *call) (any, error) {
	disk := k.p.str("disk")
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.lookupVM(k)
	if err != nil {
		return nil, err
	}
	switch {
	case v.isTemplate():
		return nil, failf("you can't convert a template to a template")
	case v.Running:
		return nil, failf("you can't convert a VM to template if VM is running")
	case v.Conf["lock"] != "":
		return nil, failf("VM is locked (%s)", v.Conf["lock"])
	case disk != "" && !isDriveKey(disk):
		return nil, paramErr("disk", "value '%s' does not have a value in the enumeration of disk keys", disk)
	}
	return c.startTask(v.Node, "qmtemplate", vmidString(v.VMID), k.user, nil, func(t *task) error {
		if c.vms[v.VMID] != v || v.Running || v.isTemplate() {
			return fmt.Errorf("VM %d changed state during template conversion", v.VMID)
		}
		for _, key := range sortedKeys(v.Conf) {
			if !isDriveKey(key) || (disk != "" && key != disk) {
				continue
			}
			old := volumeOf(v.Conf[key])
			vol := c.volumes[old]
			if vol == nil || vol.VMID != v.VMID || strings.HasSuffix(imageName(old), "-cloudinit") {
				continue
			}
			newID := strings.Replace(old, "vm-"+vmidString(v.VMID)+"-disk-", "base-"+vmidString(v.VMID)+"-disk-", 1)
			delete(c.volumes, old)
			vol.VolID = newID
			c.volumes[newID] = vol
			v.Conf[key] = newID + strings.TrimPrefix(v.Conf[key], old)
			t.logf("  Renamed \"%s\" to \"%s\"", imageName(old), imageName(newID))
		}
		v.Conf["template"] = "1"
		return nil
	}), nil
}

var sizeRE = regexp.MustCompile(`^(\+)?(\d+(?:\.\d+)?)([KMGT])?$`)

// cloneVM copies a VM or template; the new VM exists at once (see addVM). Linked clones (the default for templates) share the
// template's base images; full clones get new volumes of the same size.
func (c *Cluster) cloneVM(k *call) (any, error) {
	p := k.p
	newid := p.int("newid", 0, 100)
	p.required("newid")
	name := p.str("name")
	if name != "" {
		if _, err := vmKeys["name"].checkValue(name); err != nil {
			p.fail("name", "%s", err.Error())
		}
	}
	description := p.str("description")
	targetNode := p.str("target")
	targetStorage := p.str("storage")
	poolID := p.str("pool")
	format := p.enum("format", "raw", "qcow2", "vmdk")
	p.int("bwlimit", 0, 0)
	if snap := p.str("snapname"); snap != "" {
		p.fail("snapname", "snapshot '%s' does not exist", snap)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	src, err := c.lookupVM(k)
	if err != nil {
		return nil, err
	}
	full := p.bool("full", !src.isTemplate())
	if err := p.err(); err != nil {
		return nil, err
	}
	if targetNode == "" {
		targetNode = src.Node
	}
	if err := c.checkNode(targetNode); err != nil {
		return nil, err
	}
	switch {
	case !full && !src.isTemplate():
		return nil, failf("Linked clone feature is not supported for running or non-template VMs (use full=1)")
	case !full && targetStorage != "":
		return nil, paramErr("storage", "storage is only valid for full clones")
	case c.vms[newid] != nil:
		return nil, failf("VM %d already exists on node '%s'", newid, c.vms[newid].Node)
	case poolID != "" && c.pools[poolID] == nil:
		return nil, failf("pool '%s' does not exist", poolID)
	case src.Conf["lock"] != "":
		return nil, failf("VM is locked (%s)", src.Conf["lock"])
	}
	dst := &vm{VMID: newid, Node: targetNode, Conf: map[string]string{}}
	ch, err := c.planClone(src, dst, full, targetStorage, format)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = "Copy-of-VM-" + src.Conf["name"]
		if src.Conf["name"] == "" {
			name = "Copy-of-VM-" + vmidString(src.VMID)
		}
	}
	ch.conf["name"] = name
	if description != "" {
		ch.conf["description"] = description
	}
	if err := c.addVM(dst, ch, "clone", poolID); err != nil {
		return nil, err
	}
	return c.startTask(src.Node, "qmclone", vmidString(src.VMID), k.user, nil, func(t *task) error {
		if c.vms[newid] != dst {
			return fmt.Errorf("VM %d vanished during clone", newid)
		}
		delete(dst.Conf, "lock")
		for _, vol := range ch.add {
			t.logf("create %s clone of drive (%s)", map[bool]string{true: "full", false: "linked"}[full], vol.VolID)
		}
		return nil
	}), nil
}

// planClone works out the clone's config and volumes.
func (c *Cluster) planClone(src, dst *vm, full bool, targetStorage, format string) (*configChange, error) {
	ch := &configChange{conf: map[string]string{}}
	keys := sortedKeys(src.Conf)
	slices.SortFunc(keys, cmpDriveOrder) // volumes are numbered in PVE's drive order
	for _, key := range keys {
		val := src.Conf[key]
		switch {
		case key == "name", key == "description", key == "template", key == "lock", key == "meta", key == "vmgenid", key == "smbios1",
			strings.HasPrefix(key, "unused"):
			// Not carried over: PVE gives a clone its own identity.
		case strings.HasPrefix(key, "net"):
			ch.conf[key] = withMAC(val, true)
		case isDriveKey(key) && !isCDROM(val) || strings.HasSuffix(imageName(volumeOf(val)), "-cloudinit"):
			stored, err := c.cloneDrive(src, dst, val, full, targetStorage, format, ch)
			if err != nil {
				return nil, err
			}
			ch.conf[key] = stored
		default:
			ch.conf[key] = val
		}
	}
	if d, ok := src.Conf["description"]; ok {
		ch.conf["description"] = d
	}
	creationDefaults(ch.conf)
	return ch, nil
}

func (c *Cluster) cloneDrive(src, dst *vm, val string, full bool, targetStorage, format string, ch *configChange) (string, error) {
	d, err := parseDrive(val)
	if err != nil {
		return "", failf("%s", err.Error())
	}
	vol := c.volumes[d.file]
	if vol == nil {
		return val, nil // a passed-through path or a volume the sandbox does not track
	}
	s := c.storage(vol.storage())
	if full && targetStorage != "" {
		if s, err = c.imageStorage(targetStorage, dst.Node); err != nil {
			return "", err
		}
	}
	if !s.Shared && dst.Node != src.Node && !full {
		return "", failf("can't clone VM to node '%s' (VM uses local storage)", dst.Node)
	}
	if !storageOnNode(s, dst.Node) {
		return "", failf("storage '%s' is not available on node '%s'", s.Name, dst.Node)
	}
	cloudinit := strings.HasSuffix(imageName(vol.VolID), "-cloudinit")
	parent := ""
	if !full && !cloudinit {
		_, parent, _ = strings.Cut(vol.VolID, ":")
	}
	volFormat := formatFor(s, format)
	if !full {
		volFormat = vol.Format
	}
	volid := newVolumeID(s, dst.VMID, cloudinit, volFormat, parent, c.takenNames(s, dst.Node, ch.add))
	nv := newVolume(s, volid, dst.Node, dst.VMID, vol.Size, volFormat)
	if parent != "" {
		nv.Parent = imageName(vol.VolID) + "@__base__"
	}
	ch.add = append(ch.add, nv)
	d.file = volid
	if !cloudinit {
		d.opts["size"] = formatSize(vol.Size)
	}
	return d.String(), nil
}

// resize grows a disk: size "+10G" adds, "50G" sets; shrinking is refused as PVE does.
func (c *Cluster) resize(k *call) (any, error) {
	p := k.p
	disk := p.required("disk")
	size := p.required("size")
	skiplock := p.bool("skiplock", false)
	m := sizeRE.FindStringSubmatch(size)
	if size != "" && m == nil {
		p.fail("size", "value does not match the regex pattern")
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.lookupVM(k)
	if err != nil {
		return nil, err
	}
	if d := p.str("digest"); d != "" && d != v.digest() {
		return nil, failf("detected modified configuration - file changed by other user? Try again.")
	}
	if l := v.Conf["lock"]; l != "" && !skiplock {
		return nil, failf("VM is locked (%s)", l)
	}
	val, ok := v.Conf[disk]
	if !ok || !isDriveKey(disk) {
		return nil, failf("disk '%s' does not exist", disk)
	}
	if isCDROM(val) {
		return nil, failf("you can't resize a cdrom")
	}
	vol := c.volumes[volumeOf(val)]
	if vol == nil {
		return nil, failf("disk '%s' has no volume the sandbox can resize", disk)
	}
	n, _ := strconv.ParseFloat(m[2], 64) // the pattern guarantees a number
	unit := map[string]int64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[3]]
	newSize := int64(n * float64(unit))
	if m[1] == "+" {
		newSize += vol.Size
	}
	if newSize < vol.Size {
		return nil, failf("shrinking disks is not supported")
	}
	return c.startTask(v.Node, "resize", vmidString(v.VMID), k.user, nil, func(t *task) error {
		if c.vms[v.VMID] != v || c.volumes[vol.VolID] != vol {
			return fmt.Errorf("disk '%s' changed during resize", disk)
		}
		vol.Size = newSize
		d, err := parseDrive(v.Conf[disk])
		if err != nil {
			return err
		}
		d.opts["size"] = formatSize(newSize)
		v.Conf[disk] = d.String()
		t.logf("  Size of logical volume %s changed to %s.", imageName(vol.VolID), formatSize(newSize))
		return nil
	}), nil
}
