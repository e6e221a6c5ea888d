package proxmox_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"horizon/deploy/sandbox/pve"
	"horizon/shared/proxmox"
	"horizon/shared/secrets"
)

func sandbox(t *testing.T) (*pve.Sandbox, *pve.Cluster) {
	t.Helper()
	sb, err := pve.Start(context.Background(), pve.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	return sb, sb.Cluster("demo")
}

func client(t *testing.T, cfg proxmox.Config) *proxmox.Client {
	t.Helper()
	c, err := proxmox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pinned(c *pve.Cluster) proxmox.Config {
	return proxmox.Config{URL: c.URL(), TokenID: c.TokenID(), TokenSecret: secrets.Value(c.TokenSecret()), Fingerprint: c.CertFingerprint(), Timeout: 5 * time.Second}
}

func TestTLSIsAlwaysVerified(t *testing.T) {
	t.Parallel()
	_, c := sandbox(t)
	ctx := context.Background()

	if err := client(t, pinned(c)).Get(ctx, "/version", nil); err != nil {
		t.Fatalf("pinned fingerprint: %v", err)
	}
	byCA := pinned(c)
	byCA.Fingerprint, byCA.CACert = "", c.CACertPEM()
	if err := client(t, byCA).Get(ctx, "/version", nil); err != nil {
		t.Fatalf("CA: %v", err)
	}
	wrong := pinned(c)
	wrong.Fingerprint = strings.Repeat("AB:", 31) + "AB"
	if err := client(t, wrong).Get(ctx, "/version", nil); !errors.Is(err, proxmox.ErrTLS) {
		t.Fatalf("wrong pin: %v, want ErrTLS", err)
	}
	if _, err := proxmox.New(proxmox.Config{URL: c.URL(), TokenID: "a@pve!b"}); err == nil {
		t.Fatal("a client without a pin or a CA was built: verification must not be optional")
	}
	if _, err := proxmox.New(proxmox.Config{URL: strings.Replace(c.URL(), "https", "http", 1), Fingerprint: c.CertFingerprint()}); err == nil {
		t.Fatal("plain http was accepted")
	}
	// A certificate replaced behind Horizon's back is refused, though the CA still signs it.
	old := pinned(c)
	if _, err := c.RotateCert(); err != nil {
		t.Fatal(err)
	}
	if err := client(t, old).Get(ctx, "/version", nil); !errors.Is(err, proxmox.ErrTLS) {
		t.Fatalf("rotated certificate with the old pin: %v, want ErrTLS", err)
	}
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	sb, c := sandbox(t)
	ctx := context.Background()
	bad := pinned(c)
	bad.TokenSecret = "wrong"
	if err := client(t, bad).Get(ctx, "/nodes", nil); !errors.Is(err, proxmox.ErrAuth) {
		t.Fatalf("wrong token: %v, want ErrAuth", err)
	}
	cl := client(t, pinned(c))
	if err := cl.Get(ctx, "/nodes/pve1/qemu/4242/config", nil); !errors.Is(err, proxmox.ErrNotFound) {
		t.Fatalf("missing VM: %v, want ErrNotFound", err)
	}
	// PVE's 400 says only "Parameter verification failed."; the reasons are per parameter.
	err := cl.Post(ctx, "/nodes/pve1/qemu", map[string]any{"vmid": 4243, "memory": "lots", "cores": 0}, nil)
	if msg := fmt.Sprint(err); !strings.Contains(msg, "Parameter verification failed (") || !strings.Contains(msg, "memory: ") || !strings.Contains(msg, "cores: ") {
		t.Fatalf("invalid parameters: %v, want each parameter's reason", err)
	}
	// A lock held elsewhere, past the client's retries: busy, not a conflict.
	sb.FailNext("POST /nodes/{node}/qemu/{vmid}/status/start", 100, 500, "can't lock file '/var/lock/qemu-server/lock-4244.conf' - got timeout")
	if err := cl.Post(ctx, "/nodes/pve1/qemu/4244/status/start", map[string]any{}, nil); !errors.Is(err, proxmox.ErrBusy) || errors.Is(err, proxmox.ErrConflict) {
		t.Fatalf("a held lock: %v, want ErrBusy alone", err)
	}
	// A privilege the token lacks is not a wrong token.
	c.SetTokenACLs(c.TokenID(), []pve.ACLConfig{{Path: "/", Role: "PVEAuditor"}})
	err = cl.Post(ctx, "/nodes/pve1/qemu", map[string]any{"vmid": 4245}, nil)
	if !errors.Is(err, proxmox.ErrPermission) || errors.Is(err, proxmox.ErrAuth) || !strings.Contains(err.Error(), "Permission check failed (/vms/4245, VM.Allocate)") {
		t.Fatalf("a missing privilege: %v, want ErrPermission naming path and privilege", err)
	}
	c.SetTokenACLs(c.TokenID(), []pve.ACLConfig{{Path: "/", Role: "Administrator"}})
	if err := c.SetNodeOnline("pve2", false); err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, "/nodes/pve2/qemu", nil); !errors.Is(err, proxmox.ErrOffline) {
		t.Fatalf("offline node: %v, want ErrOffline", err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	_ = ln.Close()
	gone := pinned(c)
	gone.URL, gone.Retries = "https://"+addr, 1
	if err := client(t, gone).Get(ctx, "/version", nil); !errors.Is(err, proxmox.ErrUnreachable) {
		t.Fatalf("nothing listening: %v, want ErrUnreachable", err)
	}
	_ = sb
}

func TestTransientFailuresAreRetried(t *testing.T) {
	t.Parallel()
	sb, c := sandbox(t)
	ctx := context.Background()
	cl := client(t, pinned(c))
	sb.FailNext("GET /nodes", 2, 500, "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout")
	if err := cl.Get(ctx, "/nodes", nil); err != nil {
		t.Fatalf("two lock timeouts then success: %v", err)
	}
	sb.FailNext("GET /nodes", 2, 503, "Service Unavailable")
	if err := cl.Get(ctx, "/nodes", nil); err != nil {
		t.Fatalf("two 503s then success: %v", err)
	}
	// A real refusal is not retried: it comes back at once, and the next call is clean.
	sb.FailNext("GET /nodes", 1, 500, "something is really wrong")
	if err := cl.Get(ctx, "/nodes", nil); err == nil {
		t.Fatal("a permanent 500 was swallowed")
	}
	if err := cl.Get(ctx, "/nodes", nil); err != nil {
		t.Fatalf("the permanent 500 was retried (it consumed the failure budget differently): %v", err)
	}
	sb.FailNext("GET /nodes", 5, 503, "down")
	if err := cl.Get(ctx, "/nodes", nil); err == nil {
		t.Fatal("retries are unbounded")
	}
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	_, c := sandbox(t)
	ctx := context.Background()
	if err := c.SetNodeOnline("pve3", false); err != nil {
		t.Fatal(err)
	}
	inv, err := client(t, pinned(c)).Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Version == "" || len(inv.Nodes) != 3 || !inv.Nodes[0].Online || inv.Nodes[2].Online {
		t.Fatalf("nodes: %+v (version %q)", inv.Nodes, inv.Version)
	}
	byName := map[string]proxmox.Storage{}
	for _, s := range inv.Storages {
		byName[s.Name] = s
	}
	local, shared := byName["local"], byName["shared"]
	if !local.HasContent("snippets") || local.Shared || local.Path != "/var/lib/vz" || len(local.Nodes) != 2 {
		t.Fatalf("local storage: %+v", local)
	}
	if !shared.Shared || !shared.HasContent("iso") {
		t.Fatalf("shared storage: %+v", shared)
	}
	if len(inv.Pools) != 2 || inv.Pools[0].ID != "dev" {
		t.Fatalf("pools: %+v", inv.Pools)
	}
}

func TestWaitTaskReportsFailure(t *testing.T) {
	t.Parallel()
	_, c := sandbox(t)
	ctx := context.Background()
	cl := client(t, pinned(c))
	var upid string
	if err := cl.Post(ctx, "/nodes/pve1/qemu", map[string]any{"vmid": 150, "name": "t1", "memory": 512}, &upid); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitTask(ctx, upid, 20*time.Millisecond); err != nil {
		t.Fatalf("create: %v", err)
	}
	// A download whose checksum does not match fails in its task, with PVE's message.
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("not the image")) }))
	defer files.Close()
	if err := cl.Post(ctx, "/nodes/pve1/storage/local/download-url", map[string]any{"content": "iso", "filename": "x.iso",
		"url": files.URL + "/x.iso", "checksum": strings.Repeat("0", 64), "checksum-algorithm": "sha256"}, &upid); err != nil {
		t.Fatal(err)
	}
	err := cl.WaitTask(ctx, upid, 20*time.Millisecond)
	var pe *proxmox.Error
	if !errors.Is(err, proxmox.ErrTaskFailed) || !errors.As(err, &pe) || !strings.Contains(pe.Message, "checksum") {
		t.Fatalf("failed download: %v, want ErrTaskFailed naming the checksum", err)
	}
	if err := cl.Post(ctx, "/nodes/pve2/qemu", map[string]any{"vmid": 150, "name": "t2"}, &upid); !errors.Is(err, proxmox.ErrConflict) {
		t.Fatalf("a taken VM id on another node: %v, want ErrConflict", err)
	}
}

// TestTaskExitIsTyped: the exit statuses of failed tasks that callers act on are typed errors
// (errors.Is / errors.As), so no caller matches Proxmox's wording.
func TestTaskExitIsTyped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		exit     string
		kind     error
		mismatch *proxmox.ChecksumMismatchError
	}{
		{exit: "checksum mismatch: got 'ab12' != expect 'cd34'", mismatch: &proxmox.ChecksumMismatchError{Got: "ab12", Expected: "cd34"}},
		{exit: "refusing to override existing file '/var/lib/vz/template/iso/noble.img'", kind: proxmox.ErrFileExists},
		{exit: "can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout", kind: proxmox.ErrBusy},
		{exit: "command 'qemu-img convert' failed: exit code 1", kind: proxmox.ErrTaskFailed},
	} {
		err := proxmox.TaskExit(tc.exit)
		var mismatch *proxmox.ChecksumMismatchError
		switch {
		case tc.mismatch != nil:
			if !errors.As(err, &mismatch) || *mismatch != *tc.mismatch {
				t.Errorf("%q: %v, want %+v", tc.exit, err, tc.mismatch)
			}
		case !errors.Is(err, tc.kind) || errors.As(err, &mismatch):
			t.Errorf("%q: %v, want kind %v", tc.exit, err, tc.kind)
		case err.Error() != tc.exit:
			t.Errorf("%q: %q is not the exit status as Proxmox wrote it", tc.exit, err)
		}
	}
}
