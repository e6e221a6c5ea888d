package pve

import (
	"context"
	"net/url"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
)

// TestPersistenceAcrossRestart restarts a sandbox on the same data directory: VMs, pools,
// disks, storage files, host keys and the certificate survive; a running VM serves SSH again.
func TestPersistenceAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := newClientKey(t)
	ip := randomLoopback(t)
	cfg := DefaultConfig()
	cfg.TaskDuration = 10 * time.Millisecond
	cfg.DataDir = dir
	cfg.SSHAuthorizedKeys = []string{authorizedKeyLine(key.PublicKey())}

	start := func() *testEnv {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sb, err := Start(ctx, cfg)
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		return &testEnv{sb: sb, c: sb.Cluster("demo"), signer: key}
	}

	e := start()
	if err := writeRemote(e.sftp(t, "pve1"), "/var/lib/vz/snippets/keep.yaml", "#cloud-config\n"); err != nil {
		t.Fatal(err)
	}
	mustOK(t, e.call(t, "POST", "/pools", url.Values{"poolid": {"kept"}}))
	e.mustTaskOK(t, "POST", "/nodes/pve2/qemu", url.Values{
		"vmid": {"100"}, "name": {"survivor"}, "scsi0": {"local-lvm:4"}, "pool": {"kept"},
		"ipconfig0": {"ip=" + ip + "/8"}, "sshkeys": {proxmox.EncodeSSHKeys(authorizedKeyLine(key.PublicKey()))}, "start": {"1"},
	})
	hostKey, certFP := e.c.Node("pve1").HostKeyFingerprint(), e.c.CertFingerprint()
	if err := e.sb.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	e = start()
	t.Cleanup(func() { e.sb.Close() })
	v := e.vm(t, 100)
	if v.Name != "survivor" || v.Node != "pve2" || v.Pool != "kept" || v.Status != "running" || v.Config["scsi0"] != "local-lvm:vm-100-disk-0,size=4G" {
		t.Fatalf("VM after restart: %+v", v)
	}
	if got := e.c.Node("pve1").HostKeyFingerprint(); got != hostKey {
		t.Fatalf("host key changed across restart: %s → %s", hostKey, got)
	}
	if got := e.c.CertFingerprint(); got != certFP {
		t.Fatalf("certificate changed across restart: %s → %s", certFP, got)
	}
	snippets := mustOK(t, e.call(t, "GET", "/nodes/pve1/storage/local/content", url.Values{"content": {"snippets"}})).([]any)
	if len(snippets) != 1 {
		t.Fatalf("snippets after restart: %v", snippets)
	}
	disks := mustOK(t, e.call(t, "GET", "/nodes/pve2/storage/local-lvm/content", nil)).([]any)
	if len(disks) != 1 || disks[0].(map[string]any)["volid"] != "local-lvm:vm-100-disk-0" {
		t.Fatalf("disks after restart: %v", disks)
	}
	if got := mustOK(t, e.call(t, "GET", "/cluster/nextid", nil)); got != "101" {
		t.Fatalf("nextid after restart: %v", got)
	}
	conn, err := dialVM(e.c.VMSSHAddr(100), key, hostKeyAny)
	if err != nil {
		t.Fatalf("VM SSH after restart: %v", err)
	}
	conn.Close()
}
