package pve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// drive is a parsed disk or CD-ROM value: "file,opt=val,…".
type drive struct {
	file string
	opts map[string]string
}

// driveOptions are the drive options the sandbox accepts (a subset of PVE's drive format).
var driveOptions = []string{
	"aio", "backup", "cache", "detect_zeroes", "discard", "efitype", "format", "import-from",
	"iothread", "media", "ms-cert", "pre-enrolled-keys", "queues", "replicate", "rerror", "ro",
	"serial", "shared", "size", "snapshot", "ssd", "version", "werror", "wwn",
}

func parseDrive(v string) (drive, error) {
	d := drive{opts: map[string]string{}}
	for i, part := range strings.Split(v, ",") {
		k, val, hasEq := strings.Cut(part, "=")
		if i == 0 && !hasEq {
			d.file = part
			continue
		}
		if !hasEq {
			return d, errors.New("invalid format - missing key in comma-separated list property")
		}
		if k == "file" || k == "volume" {
			d.file = val
			continue
		}
		if !slices.Contains(driveOptions, k) {
			return d, fmt.Errorf("invalid format - format error\n%s: %s", k, msgNotDefined)
		}
		d.opts[k] = val
	}
	if d.file == "" {
		return d, errors.New("invalid format - format error\nfile: property is missing and it is not optional")
	}
	return d, nil
}

// String renders the drive as PVE stores it: the volume, then the options in key order.
func (d drive) String() string {
	parts := []string{d.file}
	for _, k := range sortedKeys(d.opts) {
		parts = append(parts, k+"="+d.opts[k])
	}
	return strings.Join(parts, ",")
}

func isCDROM(val string) bool {
	d, err := parseDrive(val)
	return err == nil && (d.opts["media"] == "cdrom" || d.file == "none" || d.file == "cdrom")
}

var (
	allocRE     = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9\-_.]*):([0-9]+(?:\.[0-9]+)?)$`)
	cloudinitRE = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9\-_.]*):cloudinit$`)
)

// planDrive checks a drive value, plans the volume it allocates, imports or attaches, and
// returns the value to store (volume ID plus size=, as PVE writes it).
func (c *Cluster) planDrive(v *vm, key, raw string, ch *configChange) (string, error) {
	d, err := parseDrive(raw)
	if err != nil {
		return "", paramErr(key, "%s", err.Error())
	}
	cdrom := d.opts["media"] == "cdrom" || d.file == "none" || d.file == "cdrom"
	if cdrom && strings.HasPrefix(key, "virtio") {
		return "", paramErr(key, "virtio drives can't be CD-ROMs")
	}
	if d.file == "none" || d.file == "cdrom" {
		return d.String(), nil
	}
	if m := cloudinitRE.FindStringSubmatch(d.file); m != nil {
		s, err := c.imageStorage(m[1], v.Node)
		if err != nil {
			return "", err
		}
		volid := newVolumeID(s, v.VMID, true, "qcow2", "", c.takenNames(s, v.Node, ch.add))
		if !s.fileBased() {
			volid = s.Name + ":vm-" + vmidString(v.VMID) + "-cloudinit"
		}
		ch.add = append(ch.add, newVolume(s, volid, v.Node, v.VMID, 4<<20, formatFor(s, "")))
		d.file, d.opts["media"] = volid, "cdrom"
		return d.String(), nil
	}
	if m := allocRE.FindStringSubmatch(d.file); m != nil {
		return c.planAllocation(v, key, m[1], m[2], d, ch)
	}
	if cdrom {
		f, ok := c.parseFileVolume(d.file, "")
		if !ok || f.content != "iso" || !storageOnNode(f.storage, v.Node) {
			return "", paramErr(key, "invalid format - '%s' is not an ISO image volume", d.file)
		}
		if _, err := os.Stat(c.fileVolumePath(f, v.Node)); err != nil {
			return "", failf("volume '%s' does not exist", d.file)
		}
		return d.String(), nil
	}
	vol := c.volumes[d.file]
	if vol == nil || vol.VMID != v.VMID {
		return "", failf("volume '%s' does not exist", d.file)
	}
	// Attaching an unused volume again takes it out of the unused list.
	for k, val := range ch.conf {
		if strings.HasPrefix(k, "unused") && val == d.file {
			delete(ch.conf, k)
		}
	}
	d.opts["size"] = formatSize(vol.Size)
	delete(d.opts, "format")
	return d.String(), nil
}

// planAllocation handles "STORAGE:SIZE_IN_GiB": a new volume, imported from import-from
// when given (its size is then the source's), fixed-size for EFI vars and TPM state.
func (c *Cluster) planAllocation(v *vm, key, sid, sizeGiB string, d drive, ch *configChange) (string, error) {
	s, err := c.imageStorage(sid, v.Node)
	if err != nil {
		return "", err
	}
	gb, _ := strconv.ParseFloat(sizeGiB, 64) // the pattern guarantees a number
	size := int64(gb * float64(gib))
	if src := d.opts["import-from"]; src != "" {
		if size, err = c.importSize(src, v.Node); err != nil {
			return "", err
		}
		delete(d.opts, "import-from")
	}
	switch key {
	case "efidisk0":
		size = 528 << 10
		if d.opts["efitype"] == "4m" {
			size = 4 << 20
		}
	case "tpmstate0":
		size = 4 << 20
	}
	if size <= 0 {
		return "", paramErr(key, "invalid format - volume size must be greater than 0 (use STORAGE:0 only with import-from)")
	}
	format := formatFor(s, d.opts["format"])
	delete(d.opts, "format")
	volid := newVolumeID(s, v.VMID, false, format, "", c.takenNames(s, v.Node, ch.add))
	ch.add = append(ch.add, newVolume(s, volid, v.Node, v.VMID, size, format))
	d.file = volid
	d.opts["size"] = formatSize(size)
	return d.String(), nil
}

// imageStorage checks that a storage can hold VM images on node.
func (c *Cluster) imageStorage(sid, node string) (*StorageConfig, error) {
	s := c.storage(sid)
	if s == nil {
		return nil, failf("storage '%s' does not exist", sid)
	}
	if !storageOnNode(s, node) {
		return nil, failf("storage '%s' is not available on node '%s'", sid, node)
	}
	if !s.hasContent("images") {
		return nil, failf("storage '%s' does not support vm images", sid)
	}
	return s, nil
}

// formatFor is the image format of a new volume: raw on block storages, qcow2 by default
// on file storages.
func formatFor(s *StorageConfig, asked string) string {
	if !s.fileBased() {
		return "raw"
	}
	if asked != "" {
		return asked
	}
	return "qcow2"
}

// importSize is the virtual size of an import source: a file volume (import, iso) or
// another image.
func (c *Cluster) importSize(src, node string) (int64, error) {
	if f, ok := c.parseFileVolume(src, ""); ok {
		path := c.fileVolumePath(f, node)
		if !storageOnNode(f.storage, node) {
			return 0, failf("storage '%s' is not available on node '%s'", f.storage.Name, node)
		}
		size, err := virtualSize(path)
		if err != nil {
			return 0, failf("volume '%s' does not exist", src)
		}
		return size, nil
	}
	if vol := c.volumes[src]; vol != nil {
		return vol.Size, nil
	}
	if strings.HasPrefix(src, "/") {
		return 0, failf("sandbox: import-from an absolute path is not supported, use a volume ID such as local:import/image.qcow2")
	}
	return 0, failf("volume '%s' does not exist", src)
}

// virtualSize is a disk image's size as a guest sees it: the header field of a qcow2 file,
// the file size for anything else.
func virtualSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close() // read-only
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	hdr := make([]byte, 32)
	if _, err := io.ReadFull(f, hdr); err == nil && string(hdr[:4]) == "QFI\xfb" {
		return int64(binary.BigEndian.Uint64(hdr[24:32])), nil
	}
	return info.Size(), nil
}
