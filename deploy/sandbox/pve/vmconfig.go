package pve

import (
	"fmt"
	"slices"
	"strings"
)

// configChange is a VM config update worked out in full before anything changes: the new
// config, the volumes it creates and those it destroys. Create and PUT commit it at once;
// POST commits it when its task ends.
type configChange struct {
	conf   map[string]string
	add    []*volume
	remove []string
}

// planConfig checks a create or config call's parameters against the VM and works out the
// change. Parameter problems are one 400 listing them all, as PVE's validator does.
func (c *Cluster) planConfig(v *vm, p *params, creating bool) (*configChange, error) {
	if !creating {
		if d := p.str("digest"); d != "" && d != v.digest() {
			return nil, failf("detected modified configuration - file changed by other user? Try again.")
		}
		if l := v.Conf["lock"]; l != "" {
			return nil, failf("VM is locked (%s)", l)
		}
	}
	ch := &configChange{conf: copyMap(v.Conf)}
	deletes := splitList(p.str("delete"))
	for _, key := range deletes {
		if _, _, ok := lookupKey(key); !ok && key != "meta" {
			p.fail("delete", "invalid format - invalid configuration ID '%s'", key)
		} else if p.has(key) {
			p.fail(key, "you can't use '-%s' and '-delete %s' at the same time", key, key)
		}
	}
	var keys []string
	for key := range p.values {
		if _, _, ok := lookupKey(key); ok {
			keys = append(keys, key)
		}
	}
	// Drives are allocated in PVE's order (ide, sata, scsi, virtio, efidisk, tpmstate), which
	// decides who gets disk-0, disk-1, …
	slices.SortFunc(keys, cmpDriveOrder)
	values := map[string]string{}
	for _, key := range keys {
		spec, _, _ := lookupKey(key)
		if spec.kind == kindDrive {
			values[key] = p.str(key)
			continue
		}
		val, err := spec.checkValue(p.str(key))
		if err != nil {
			p.fail(key, "%s", err.Error())
			continue
		}
		if strings.HasPrefix(key, "net") {
			val = withMAC(val, false)
			if old, ok := v.Conf[key]; ok && macOf(old) != "" && macOf(p.str(key)) == "" {
				val = withMACValue(val, macOf(old)) // keep the MAC when the client omits it
			}
		}
		values[key] = val
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	for _, key := range deletes {
		c.planDelete(v, key, ch)
	}
	for _, key := range keys {
		if !isDriveKey(key) {
			ch.conf[key] = values[key]
			continue
		}
		stored, err := c.planDrive(v, key, values[key], ch)
		if err != nil {
			return nil, err
		}
		if old, ok := ch.conf[key]; ok && volumeOf(old) != volumeOf(stored) {
			c.detach(v, old, ch)
		}
		ch.conf[key] = stored
	}
	return ch, nil
}

// planDelete removes a key. A disk is kept as unusedN, as PVE does; deleting unusedN or a
// cloud-init drive destroys the volume.
func (c *Cluster) planDelete(v *vm, key string, ch *configChange) {
	old, ok := ch.conf[key]
	if !ok {
		return
	}
	delete(ch.conf, key)
	switch {
	case strings.HasPrefix(key, "unused"):
		ch.remove = append(ch.remove, volumeOf(old))
	case isDriveKey(key):
		c.detach(v, old, ch)
	}
}

// detach handles a drive value leaving the config: an image of this VM becomes unusedN, a
// cloud-init drive is destroyed, a CD-ROM is simply gone.
func (c *Cluster) detach(v *vm, old string, ch *configChange) {
	volid := volumeOf(old)
	vol := c.volumes[volid]
	if vol == nil || vol.VMID != v.VMID {
		return
	}
	if strings.HasSuffix(imageName(volid), "-cloudinit") {
		ch.remove = append(ch.remove, volid)
		return
	}
	for n := 0; ; n++ {
		k := fmt.Sprintf("unused%d", n)
		if _, used := ch.conf[k]; !used {
			ch.conf[k] = volid
			return
		}
	}
}

// commit applies a planned change.
func (c *Cluster) commit(v *vm, ch *configChange) error {
	for _, vol := range ch.add {
		if c.volumes[vol.VolID] != nil {
			return fmt.Errorf("unable to create volume '%s' - it already exists", vol.VolID)
		}
	}
	for _, vol := range ch.add {
		c.volumes[vol.VolID] = vol
	}
	for _, volid := range ch.remove {
		delete(c.volumes, volid)
	}
	v.Conf = ch.conf
	return nil
}

func macOf(val string) string {
	opts, order, err := parseOrdered(val)
	if err != nil {
		return ""
	}
	for _, k := range order {
		if slices.Contains(netModels, k) {
			return opts[k]
		}
	}
	return ""
}

func withMACValue(val, mac string) string {
	model, rest, _ := strings.Cut(val, ",")
	name, _, _ := strings.Cut(model, "=")
	if rest == "" {
		return name + "=" + mac
	}
	return name + "=" + mac + "," + rest
}

var driveOrder = []string{"ide", "sata", "scsi", "virtio", "efidisk", "tpmstate"}

// cmpDriveOrder orders config keys: drives in PVE's allocation order first, then the rest
// by name.
func cmpDriveOrder(a, b string) int {
	rank := func(k string) (int, int) {
		prefix, idx, ok := splitIndexed(k)
		if i := slices.Index(driveOrder, prefix); ok && i >= 0 {
			return i, idx
		}
		return len(driveOrder), 0
	}
	ra, ia := rank(a)
	rb, ib := rank(b)
	switch {
	case ra != rb:
		return ra - rb
	case ia != ib:
		return ia - ib
	}
	return strings.Compare(a, b)
}
