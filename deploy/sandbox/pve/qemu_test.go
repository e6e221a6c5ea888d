package pve

import (
	"encoding/binary"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVMIDsAreUniquePerCluster(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	if got := mustOK(t, e.call(t, "GET", "/cluster/nextid", nil)); got != "100" {
		t.Fatalf("nextid: got %v, want \"100\"", got)
	}
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}})
	// nextid reserves nothing: asked twice, it answers the same.
	for range 2 {
		if got := mustOK(t, e.call(t, "GET", "/cluster/nextid", nil)); got != "101" {
			t.Fatalf("nextid: got %v, want \"101\"", got)
		}
	}
	r := e.call(t, "GET", "/cluster/nextid", url.Values{"vmid": {"100"}})
	if r.status != 400 || r.errors()["vmid"] != "VM 100 already exists" {
		t.Fatalf("nextid?vmid=100: got %d %v", r.status, r.body)
	}
	for _, node := range []string{"pve1", "pve2", "pve3"} {
		r := e.call(t, "POST", "/nodes/"+node+"/qemu", url.Values{"vmid": {"100"}})
		if r.status != 500 || r.reason != "VM 100 already exists on node 'pve1'" {
			t.Fatalf("create 100 on %s: got %d %q", node, r.status, r.reason)
		}
	}
	// A VM being created already holds its ID.
	e.sb.HangTasks("qmcreate")
	upid := mustOK(t, e.call(t, "POST", "/nodes/pve3/qemu", url.Values{"vmid": {"101"}})).(string)
	r = e.call(t, "POST", "/nodes/pve1/qemu/100/clone", url.Values{"newid": {"101"}, "target": {"pve2"}})
	if r.status != 500 || r.reason != "VM 101 already exists on node 'pve3'" {
		t.Fatalf("clone onto a VMID being created: got %d %q", r.status, r.reason)
	}
	if got := e.vm(t, 101).Config["lock"]; got != "create" {
		t.Fatalf("VM being created: lock %q", got)
	}
	e.sb.ReleaseTasks("qmcreate")
	e.waitTask(t, upid)
}

// writeQcow2 writes a minimal qcow2 header declaring the given virtual size.
func writeQcow2(t *testing.T, path string, size uint64) {
	t.Helper()
	hdr := make([]byte, 512)
	copy(hdr, "QFI\xfb")
	binary.BigEndian.PutUint32(hdr[4:], 3)
	binary.BigEndian.PutUint64(hdr[24:], size)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImageBuildPipeline walks the image-build pipeline: UEFI with an EFI disk, TPM, a disk
// imported from a downloaded cloud image and resized, a GPU, cloud-init, template, clones.
func TestImageBuildPipeline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	local := e.c.storage("local")
	writeQcow2(t, filepath.Join(e.c.storageDir(local, "pve1"), "import", "noble.qcow2"), 3584<<20)

	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{
		"vmid": {"9000"}, "name": {"ubuntu-noble"}, "memory": {"4096"}, "cores": {"2"}, "cpu": {"host"},
		"machine": {"q35"}, "bios": {"ovmf"}, "scsihw": {"virtio-scsi-single"},
		"efidisk0":  {"local-lvm:1,efitype=4m,pre-enrolled-keys=1"},
		"tpmstate0": {"local-lvm:1,version=v2.0"},
		"scsi0":     {"local-lvm:0,import-from=local:import/noble.qcow2,discard=on,ssd=1"},
		"ide2":      {"local-lvm:cloudinit"},
		"net0":      {"virtio,bridge=vmbr0"},
		"boot":      {"order=scsi0"}, "serial0": {"socket"}, "vga": {"serial0"}, "agent": {"enabled=1"},
		"hostpci0":  {"0000:01:00.0,pcie=1,x-vga=1"},
		"ipconfig0": {"ip=dhcp"}, "ciuser": {"ubuntu"}, "cicustom": {"user=local:snippets/noble.yaml"},
	})
	conf := e.vm(t, 9000).Config
	for key, want := range map[string]string{
		"efidisk0":  "local-lvm:vm-9000-disk-1,efitype=4m,pre-enrolled-keys=1,size=4M",
		"tpmstate0": "local-lvm:vm-9000-disk-2,size=4M,version=v2.0",
		"scsi0":     "local-lvm:vm-9000-disk-0,discard=on,size=3584M,ssd=1",
		"ide2":      "local-lvm:vm-9000-cloudinit,media=cdrom",
		"hostpci0":  "0000:01:00.0,pcie=1,x-vga=1",
	} {
		if conf[key] != want {
			t.Errorf("%s: got %q, want %q", key, conf[key], want)
		}
	}

	e.mustTaskOK(t, "PUT", "/nodes/pve1/qemu/9000/resize", url.Values{"disk": {"scsi0"}, "size": {"+10G"}})
	if got := e.vm(t, 9000).Config["scsi0"]; got != "local-lvm:vm-9000-disk-0,discard=on,size=13824M,ssd=1" {
		t.Fatalf("after resize: scsi0 %q", got)
	}
	r := e.call(t, "PUT", "/nodes/pve1/qemu/9000/resize", url.Values{"disk": {"scsi0"}, "size": {"5G"}})
	if r.status != 500 || r.reason != "shrinking disks is not supported" {
		t.Fatalf("shrink: got %d %q", r.status, r.reason)
	}
	e.mustTaskOK(t, "PUT", "/nodes/pve1/qemu/9000/resize", url.Values{"disk": {"scsi0"}, "size": {"20G"}})

	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/9000/template", nil)
	tmpl := e.vm(t, 9000)
	if !tmpl.Template || !strings.HasPrefix(tmpl.Config["scsi0"], "local-lvm:base-9000-disk-0,") {
		t.Fatalf("template: %v %q", tmpl.Template, tmpl.Config["scsi0"])
	}
	r = e.call(t, "POST", "/nodes/pve1/qemu/9000/template", nil)
	if r.status != 500 || r.reason != "you can't convert a template to a template" {
		t.Fatalf("template twice: %d %q", r.status, r.reason)
	}

	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/9000/clone", url.Values{"newid": {"101"}, "name": {"web-1"}})
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/9000/clone", url.Values{
		"newid": {"102"}, "name": {"web-2"}, "full": {"1"}, "target": {"pve2"}, "storage": {"local-lvm"}, "description": {"full copy"},
	})
	linked, full := e.vm(t, 101), e.vm(t, 102)
	if linked.Config["scsi0"] != "local-lvm:base-9000-disk-0/vm-101-disk-0,discard=on,size=20G,ssd=1" || linked.Node != "pve1" {
		t.Errorf("linked clone: %s %q", linked.Node, linked.Config["scsi0"])
	}
	if full.Config["scsi0"] != "local-lvm:vm-102-disk-0,discard=on,size=20G,ssd=1" || full.Node != "pve2" || full.Config["description"] != "full copy" {
		t.Errorf("full clone: %s %q %q", full.Node, full.Config["scsi0"], full.Config["description"])
	}
	if linked.Config["net0"] == tmpl.Config["net0"] || linked.Template || linked.Config["ide2"] != "local-lvm:vm-101-cloudinit,media=cdrom" {
		t.Errorf("clone identity: net0 %q (template %q), template %v, ide2 %q", linked.Config["net0"], tmpl.Config["net0"], linked.Template, linked.Config["ide2"])
	}
	r = e.call(t, "DELETE", "/nodes/pve1/qemu/9000", nil)
	if r.status != 500 || !strings.Contains(r.reason, "still in use by linked clone") {
		t.Fatalf("destroying a template with a linked clone: %d %q", r.status, r.reason)
	}
}

func TestConfigUpdates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu", url.Values{"vmid": {"100"}, "scsi0": {"local-lvm:4"}, "name": {"a"}})

	// delete turns a disk into unusedN; deleting that destroys the volume.
	e.mustTaskOK(t, "POST", "/nodes/pve1/qemu/100/config", url.Values{"delete": {"scsi0"}, "virtio0": {"local-lvm:2"}})
	conf := e.vm(t, 100).Config
	if conf["unused0"] != "local-lvm:vm-100-disk-0" || conf["virtio0"] != "local-lvm:vm-100-disk-1,size=2G" {
		t.Fatalf("after delete scsi0: %v", conf)
	}
	if err := e.putConfig(t, url.Values{"delete": {"unused0"}}); err != nil {
		t.Fatal(err)
	}
	content := mustOK(t, e.call(t, "GET", "/nodes/pve1/storage/local-lvm/content", nil)).([]any)
	if len(content) != 1 {
		t.Fatalf("volumes after deleting unused0: %v", content)
	}

	// digest guards against concurrent edits.
	cfg := mustOK(t, e.call(t, "GET", "/nodes/pve1/qemu/100/config", nil)).(map[string]any)
	if err := e.putConfig(t, url.Values{"name": {"b"}, "digest": {cfg["digest"].(string)}}); err != nil {
		t.Fatal(err)
	}
	r := e.call(t, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"name": {"c"}, "digest": {cfg["digest"].(string)}})
	if r.status != 500 || !strings.HasPrefix(r.reason, "detected modified configuration") {
		t.Fatalf("stale digest: %d %q", r.status, r.reason)
	}

	// Only loopback static addresses; the refusal says why.
	r = e.call(t, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"ipconfig0": {"ip=10.1.2.3/24,gw=10.1.2.1"}})
	if r.status != 400 || !strings.Contains(r.errors()["ipconfig0"].(string), "127.0.0.0/8") {
		t.Fatalf("non-loopback ipconfig0: %d %v", r.status, r.body)
	}
	for _, ok := range []string{"ip=dhcp", "ip=127.10.0.5/8,gw=127.0.0.1", "ip=127.1.2.3/24,ip6=auto"} {
		if err := e.putConfig(t, url.Values{"ipconfig0": {ok}}); err != nil {
			t.Errorf("ipconfig0 %q: %v", ok, err)
		}
	}

	// The keys Horizon writes round-trip in PVE's formats.
	set := url.Values{
		"startup": {"order=2,up=30"}, "onboot": {"1"}, "nameserver": {"127.0.0.53"}, "searchdomain": {"example.test"},
		"ciuser": {"ops"}, "cipassword": {"secret"}, "sshkeys": {"ssh-ed25519%20AAAAC3Nza%20me%40host"},
		"description": {"a\nb"}, "sockets": {"2"}, "memory": {"1024"},
	}
	if err := e.putConfig(t, set); err != nil {
		t.Fatal(err)
	}
	got := mustOK(t, e.call(t, "GET", "/nodes/pve1/qemu/100/config", nil)).(map[string]any)
	for k, want := range map[string]any{
		"startup": "order=2,up=30", "onboot": 1.0, "nameserver": "127.0.0.53", "sockets": 2.0, "memory": "1024",
		"sshkeys": "ssh-ed25519%20AAAAC3Nza%20me%40host", "cipassword": "**********", "description": "a\nb",
	} {
		if got[k] != want {
			t.Errorf("GET config %s: got %#v, want %#v", k, got[k], want)
		}
	}
	r = e.call(t, "PUT", "/nodes/pve1/qemu/100/config", url.Values{"sshkeys": {"ssh-ed25519+AAAA"}})
	if r.status != 400 || !strings.Contains(r.errors()["sshkeys"].(string), "urlencoded") {
		t.Fatalf("sshkeys with '+': %d %v", r.status, r.body)
	}
}

func (e *testEnv) putConfig(t *testing.T, v url.Values) error {
	t.Helper()
	r := e.call(t, "PUT", "/nodes/pve1/qemu/100/config", v)
	if r.status != 200 {
		return &apiError{status: r.status, message: r.reason}
	}
	return nil
}

func TestPowerCycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.mustTaskOK(t, "POST", "/nodes/pve3/qemu", url.Values{"vmid": {"100"}, "memory": {"1024"}, "cores": {"2"}, "sockets": {"2"}})
	e.mustTaskOK(t, "POST", "/nodes/pve3/qemu/100/status/start", nil)
	st := mustOK(t, e.call(t, "GET", "/nodes/pve3/qemu/100/status/current", nil)).(map[string]any)
	if st["status"] != "running" || st["qmpstatus"] != "running" || st["cpus"] != 4.0 || st["maxmem"] != float64(1<<30) {
		t.Fatalf("status/current: %v", st)
	}
	r := e.call(t, "DELETE", "/nodes/pve3/qemu/100", nil)
	if r.status != 500 || r.reason != "VM 100 is running - destroy failed" {
		t.Fatalf("destroy a running VM: %d %q", r.status, r.reason)
	}
	e.mustTaskOK(t, "POST", "/nodes/pve3/qemu/100/status/reboot", nil)
	e.mustTaskOK(t, "POST", "/nodes/pve3/qemu/100/status/shutdown", url.Values{"timeout": {"30"}, "forceStop": {"1"}})
	tk := e.waitTask(t, mustOK(t, e.call(t, "POST", "/nodes/pve3/qemu/100/status/shutdown", nil)).(string))
	if tk.ExitStatus != "VM 100 not running" {
		t.Fatalf("shutdown of a stopped VM: %q", tk.ExitStatus)
	}
	e.mustTaskOK(t, "POST", "/nodes/pve3/qemu/100/status/stop", nil) // stopping a stopped VM is fine
	e.mustTaskOK(t, "DELETE", "/nodes/pve3/qemu/100", url.Values{"purge": {"1"}})
	if len(e.c.VMs()) != 0 {
		t.Fatalf("VMs after destroy: %v", e.c.VMs())
	}
}
