package pve

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// vm is a QEMU guest: its config as PVE stores it (key → the value of qemu-server/<vmid>.conf)
// and whether it runs. A running VM with a loopback ipconfig0 has an SSH server.
type vm struct {
	VMID    int               `json:"vmid"`
	Node    string            `json:"node"`
	Conf    map[string]string `json:"config"`
	Running bool              `json:"running"`
	Started time.Time         `json:"started"`
	// Snapshots are the [name] sections of the config file: the config as it was, plus
	// snaptime and the snapshot's description.
	Snapshots map[string]map[string]string `json:"snapshots,omitempty"`

	ssh     *vmSSH
	hostKey ssh.Signer // random host key used when cloud-init gives none; kept across reboots
}

func (v *vm) status() string {
	if v.Running {
		return "running"
	}
	return "stopped"
}

func (v *vm) isTemplate() bool { return v.Conf["template"] == "1" }

// digest is the SHA1 of the config file, which PVE returns as "digest" and checks when a
// client sends it back. As in PVE (qemu-server hashes the raw file) it covers everything the
// file holds: the description (notes), the parent snapshot and every [snapshot] section, so a
// snapshot or a notes edit changes it without changing any setting.
func (v *vm) digest() string {
	var b strings.Builder
	for _, k := range sortedKeys(v.Conf) {
		fmt.Fprintf(&b, "%s: %s\n", k, v.Conf[k])
	}
	for _, name := range sortedKeys(v.Snapshots) {
		fmt.Fprintf(&b, "\n[%s]\n", name)
		for _, k := range sortedKeys(v.Snapshots[name]) {
			fmt.Fprintf(&b, "%s: %s\n", k, v.Snapshots[name][k])
		}
	}
	return sha1Hex(b.String())
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// isDriveKey reports whether a config key holds a disk or CD-ROM.
func isDriveKey(key string) bool {
	k, _, ok := lookupKey(key)
	return ok && k.kind == kindDrive
}

// volumeOf returns the volume ID a drive or unusedN value refers to.
func volumeOf(value string) string {
	file, _, _ := strings.Cut(value, ",")
	file = strings.TrimPrefix(strings.TrimPrefix(file, "file="), "volume=")
	return file
}

// usesVolume reports whether the VM's config references volid.
func (v *vm) usesVolume(volid string) bool {
	for k, val := range v.Conf {
		if (isDriveKey(k) || strings.HasPrefix(k, "unused")) && volumeOf(val) == volid {
			return true
		}
	}
	return false
}

// renderConfig is the answer of GET …/config: typed values and the digest. The cloud-init
// password is masked, as PVE masks it.
func renderConfig(v *vm) map[string]any {
	out := map[string]any{"digest": v.digest()}
	for key, val := range v.Conf {
		out[key] = renderValue(key, val)
	}
	if _, ok := out["cipassword"]; ok {
		out["cipassword"] = "**********"
	}
	return out
}

func renderValue(key, val string) any {
	k, _, ok := lookupKey(key)
	if !ok {
		return val
	}
	switch k.kind {
	case kindInt, kindBool:
		if n, err := strconv.Atoi(val); err == nil {
			return n
		}
	case kindNumber:
		if f, err := strconv.ParseFloat(val, 64); err == nil {
			return f
		}
	}
	return val
}

// memoryBytes is the configured memory (default 512 MiB).
func (v *vm) memoryBytes() int64 {
	mib, err := strconv.Atoi(v.Conf["memory"])
	if err != nil {
		mib = 512
	}
	return int64(mib) << 20
}

// cpus is sockets × cores, or vcpus when set.
func (v *vm) cpus() int {
	if n, err := strconv.Atoi(v.Conf["vcpus"]); err == nil {
		return n
	}
	sockets, err := strconv.Atoi(v.Conf["sockets"])
	if err != nil {
		sockets = 1
	}
	cores, err := strconv.Atoi(v.Conf["cores"])
	if err != nil {
		cores = 1
	}
	return sockets * cores
}

// bootDisk is the config key of the disk PVE counts as the VM's root image: the first disk
// of the boot order, else the first of scsi0, virtio0, sata0, ide0.
func (v *vm) bootDisk() string {
	var candidates []string
	if opts, err := parsePropertyString(v.Conf["boot"], "legacy"); err == nil {
		candidates = strings.Split(opts["order"], ";")
	}
	candidates = append(candidates, "scsi0", "virtio0", "sata0", "ide0")
	for _, k := range candidates {
		if val, ok := v.Conf[k]; ok && isDriveKey(k) && !isCDROM(val) {
			return k
		}
	}
	return ""
}

func (c *Cluster) maxDisk(v *vm) int64 {
	if k := v.bootDisk(); k != "" {
		if vol := c.volumes[volumeOf(v.Conf[k])]; vol != nil {
			return vol.Size
		}
	}
	return 0
}

// vmStatus is the status part PVE reports in the VM list, status/current and pools.
func (c *Cluster) vmStatus(v *vm) map[string]any {
	s := map[string]any{
		"vmid":      v.VMID,
		"name":      v.Conf["name"],
		"status":    v.status(),
		"cpus":      v.cpus(),
		"maxmem":    v.memoryBytes(),
		"maxdisk":   c.maxDisk(v),
		"mem":       0,
		"disk":      0,
		"cpu":       0,
		"uptime":    0,
		"netin":     0,
		"netout":    0,
		"diskread":  0,
		"diskwrite": 0,
	}
	if s["name"] == "" {
		s["name"] = fmt.Sprintf("VM %d", v.VMID)
	}
	if v.Running {
		s["uptime"] = int64(time.Since(v.Started).Seconds())
		s["mem"] = v.memoryBytes() / 4
		s["cpu"] = 0.01
		s["pid"] = 100000 + v.VMID
	}
	if t := v.Conf["tags"]; t != "" {
		s["tags"] = t
	}
	if l := v.Conf["lock"]; l != "" {
		s["lock"] = l
	}
	if v.isTemplate() {
		// PVE sets template only for templates; go-proxmox reads its presence as true.
		s["template"] = 1
	}
	return s
}

// newMAC returns a MAC address in Proxmox's OUI (BC:24:11), as PVE generates them.
func newMAC() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return fmt.Sprintf("BC:24:11:%02X:%02X:%02X", b[0], b[1], b[2])
}

// withMAC rewrites a NIC value to PVE's stored form "model=MAC,other=…" and gives it a new
// MAC when it has none (or when fresh is set, as for a clone).
func withMAC(val string, fresh bool) string {
	opts, order, err := parseOrdered(val)
	if err != nil {
		return val
	}
	model := opts["model"]
	delete(opts, "model")
	for _, k := range order {
		if slices.Contains(netModels, k) {
			model = k
		}
	}
	mac := opts[model]
	if mac == "" || fresh {
		mac = newMAC()
	}
	delete(opts, model)
	parts := []string{model + "=" + strings.ToUpper(mac)}
	for _, k := range order {
		if _, ok := opts[k]; ok {
			parts = append(parts, k+"="+opts[k])
		}
	}
	return strings.Join(parts, ",")
}

func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// creationDefaults are the keys PVE adds to every new VM.
func creationDefaults(conf map[string]string) {
	if _, ok := conf["smbios1"]; !ok {
		conf["smbios1"] = "uuid=" + newUUID()
	}
	if _, ok := conf["vmgenid"]; !ok || conf["vmgenid"] == "1" {
		conf["vmgenid"] = newUUID()
	}
	conf["meta"] = fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", time.Now().Unix())
}
