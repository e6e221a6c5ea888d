package pve

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"horizon/shared/testkit"
)

// dialNode opens SSH to the node as root with signer, pinning hostKey.
func dialNode(addr string, signer ssh.Signer, hostKey ssh.PublicKey) (*ssh.Client, error) {
	return ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User:            "root",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
		Timeout:         10 * time.Second,
	})
}

func (e *testEnv) sftp(t *testing.T, node string) *sftp.Client {
	t.Helper()
	n := e.c.Node(node)
	conn, err := dialNode(n.SSHAddr(), e.signer, n.HostKey())
	if err != nil {
		t.Fatalf("ssh %s: %v", node, err)
	}
	t.Cleanup(func() { conn.Close() })
	c, err := sftp.NewClient(conn)
	if err != nil {
		t.Fatalf("sftp %s: %v", node, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func writeRemote(c *sftp.Client, path, data string) error {
	f, err := c.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(data)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TestNodeSFTPMapsStoragePaths checks that a snippet written to the storage's PVE path is
// content of that storage, and that a shared storage is one directory for every node.
func TestNodeSFTPMapsStoragePaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.sftp(t, "pve1")
	if err := writeRemote(c, "/var/lib/vz/snippets/web-1.yaml", "#cloud-config\n"); err != nil {
		t.Fatalf("write snippet: %v", err)
	}
	if err := writeRemote(c, "/mnt/pve/shared/snippets/all.yaml", "#cloud-config\n"); err != nil {
		t.Fatalf("write shared snippet: %v", err)
	}
	if err := writeRemote(c, "/tmp/scratch", "x"); err != nil {
		t.Fatalf("write outside storages: %v", err)
	}
	got := mustOK(t, e.call(t, "GET", "/nodes/pve1/storage/local/content", url.Values{"content": {"snippets"}})).([]any)
	if len(got) != 1 || got[0].(map[string]any)["volid"] != "local:snippets/web-1.yaml" || got[0].(map[string]any)["format"] != "snippet" {
		t.Fatalf("pve1 local snippets: %v", got)
	}
	if got := mustOK(t, e.call(t, "GET", "/nodes/pve2/storage/local/content", nil)).([]any); len(got) != 0 {
		t.Fatalf("pve2 sees pve1's local storage: %v", got)
	}
	got = mustOK(t, e.call(t, "GET", "/nodes/pve3/storage/shared/content", url.Values{"content": {"snippets"}})).([]any)
	if len(got) != 1 || got[0].(map[string]any)["volid"] != "shared:snippets/all.yaml" {
		t.Fatalf("pve3 shared snippets: %v", got)
	}
	entries, err := e.sftp(t, "pve2").ReadDir("/mnt/pve/shared/snippets")
	if err != nil || len(entries) != 1 || entries[0].Name() != "all.yaml" {
		t.Fatalf("pve2 lists the shared storage: %v, %v", entries, err)
	}
	if fi, err := c.Stat("/var/lib/vz/template/iso"); err != nil || !fi.IsDir() {
		t.Fatalf("stat the ISO directory: %v, %v", fi, err)
	}
}

func TestNodeSSHRefusesUnknownKeysAndCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	n := e.c.Node("pve1")
	if _, err := dialNode(n.SSHAddr(), newClientKey(t), n.HostKey()); err == nil {
		t.Fatal("an unknown key logged in")
	}
	conn, err := dialNode(n.SSHAddr(), e.signer, n.HostKey())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, err := conn.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Run("true"); err == nil {
		t.Fatal("the node ran a command; it serves SFTP only")
	}
}

// TestConcurrentUploadIsRejected opens two files for writing at once on one node: the
// second fails with a clear message and is counted; another node is not affected.
func TestConcurrentUploadIsRejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	first := e.sftp(t, "pve1")
	f, err := first.Create("/var/lib/vz/snippets/a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.sftp(t, "pve1").Create("/var/lib/vz/snippets/b.yaml")
	var se *sftp.StatusError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "another upload is in progress on node pve1") {
		t.Fatalf("second concurrent upload: got %v, want the refusal", err)
	}
	if err := writeRemote(e.sftp(t, "pve2"), "/var/lib/vz/snippets/c.yaml", "x"); err != nil {
		t.Fatalf("upload on another node: %v", err)
	}
	if _, err := f.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := writeRemote(first, "/var/lib/vz/snippets/b.yaml", "b"); err != nil {
		t.Fatalf("upload after the first ended: %v", err)
	}
	n := e.c.Node("pve1")
	ups := n.Uploads()
	if n.RejectedUploads() != 1 || len(ups) != 2 || ups[0].End.IsZero() || ups[1].Start.Before(ups[0].End) {
		t.Fatalf("uploads %+v rejected %d", ups, n.RejectedUploads())
	}
}

// TestSequentialUploadsAreNeverRejected is what a correct client sees: uploads one after
// another from many goroutines, serialised by the client, never collide, even with the
// widened window.
func TestSequentialUploadsAreNeverRejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.UploadMinDuration = 30 * time.Millisecond })
	c := e.sftp(t, "pve1")
	var mu sync.Mutex // the client's own one-build-per-node rule
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err := writeRemote(c, "/var/lib/vz/snippets/s"+string(rune('a'+i))+".yaml", "x"); err != nil {
				t.Errorf("upload %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	n := e.c.Node("pve1")
	if n.RejectedUploads() != 0 || len(n.Uploads()) != 4 {
		t.Fatalf("uploads %d rejected %d", len(n.Uploads()), n.RejectedUploads())
	}
	for _, u := range n.Uploads() {
		if u.End.Sub(u.Start) < 30*time.Millisecond {
			t.Fatalf("upload %s lasted %s, want at least upload_min_duration", u.Path, u.End.Sub(u.Start))
		}
	}
}

func TestHostKeyRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	n := e.c.Node("pve2")
	old, oldFP := n.HostKey(), n.HostKeyFingerprint()
	if !strings.HasPrefix(oldFP, "SHA256:") || oldFP != ssh.FingerprintSHA256(old) {
		t.Fatalf("fingerprint %q", oldFP)
	}
	newFP, err := e.c.RotateHostKey("pve2")
	if err != nil || newFP == oldFP || newFP != n.HostKeyFingerprint() {
		t.Fatalf("RotateHostKey: %q, %v", newFP, err)
	}
	if _, err := dialNode(n.SSHAddr(), e.signer, old); err == nil || !strings.Contains(err.Error(), "host key") {
		t.Fatalf("pinned old key: got %v, want a host key mismatch", err)
	}
	conn, err := dialNode(n.SSHAddr(), e.signer, n.HostKey())
	if err != nil {
		t.Fatalf("new key: %v", err)
	}
	conn.Close()
}

func TestNodeOffline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	n := e.c.Node("pve3")
	conn, err := dialNode(n.SSHAddr(), e.signer, n.HostKey())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.SetNodeOnline("pve3", false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.SendRequest("keepalive@openssh.com", true, nil); err == nil {
		t.Fatal("an open session survived the node going offline")
	}
	if _, err := net.DialTimeout("tcp", n.SSHAddr(), 5*time.Second); err == nil {
		t.Fatal("offline node accepts SSH connections")
	}
	nodes := mustOK(t, e.call(t, "GET", "/nodes", nil)).([]any)
	if nodes[2].(map[string]any)["status"] != "offline" {
		t.Fatalf("/nodes: %v", nodes[2])
	}
	r := e.call(t, "GET", "/nodes/pve3/qemu", nil)
	if r.status != 595 || r.reason != "No route to host" {
		t.Fatalf("call on an offline node: %d %q", r.status, r.reason)
	}
	status := mustOK(t, e.call(t, "GET", "/cluster/status", nil)).([]any)
	if status[3].(map[string]any)["online"] != 0.0 || status[0].(map[string]any)["quorate"] != 1.0 {
		t.Fatalf("cluster status: %v", status)
	}
	if err := e.c.SetNodeOnline("pve3", true); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "pve3 accepts SSH again", func() bool {
		c, err := dialNode(n.SSHAddr(), e.signer, n.HostKey())
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	mustOK(t, e.call(t, "GET", "/nodes/pve3/qemu", nil))
}
