package main

import (
	"bytes"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"horizon/shared/testkit"
)

// TestTwoInstallationsRefuseToShareARedisNamespace starts the API as a process: on a Redis
// namespace that another installation (another database) claimed, it refuses to start and
// says which setting to change; replicas and restarts of one installation share the claim.
// Before the claim, two installations on one namespace silently took each other's tasks.
func TestTwoInstallationsRefuseToShareARedisNamespace(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "api")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the API: %v\n%s", err, out)
	}
	_, ns := testkit.Redis(t)
	first, second := testkit.DB(t), testkit.DB(t)
	start := func(db string) (*exec.Cmd, string, *bytes.Buffer) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		var out bytes.Buffer
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "HORIZON_DATABASE_URL="+db, "HORIZON_REDIS_URL="+testkit.RedisURL(), "HORIZON_NAMESPACE="+ns,
			"HORIZON_SECRET_KEY="+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)), "HORIZON_LISTEN="+addr,
			"HORIZON_LOG_FORMAT=text", "HORIZON_GIT_CACHE_DIR="+t.TempDir())
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, addr, &out
	}
	ready := func(addr string, out *bytes.Buffer) {
		t.Helper()
		testkit.Eventually(t, 30*time.Second, "the API did not answer /readyz", func() bool {
			r, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				return false
			}
			_ = r.Body.Close()
			return r.StatusCode == 200
		})
	}

	_, addr, out := start(first.Config().ConnString())
	ready(addr, out)
	_, addr, out = start(first.Config().ConnString()) // a replica of the same installation
	ready(addr, out)

	other, _, otherOut := start(second.Config().ConnString())
	done := make(chan error, 1)
	go func() { done <- other.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("the second installation exited 0:\n%s", otherOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the second installation on namespace %s is still running:\n%s", ns, otherOut)
	}
	for _, want := range []string{ns, "is already used by another Horizon installation", "HORIZON_NAMESPACE", "HORIZON_REDIS_URL"} {
		if !strings.Contains(otherOut.String(), want) {
			t.Fatalf("the refusal does not say %q:\n%s", want, otherOut)
		}
	}
}
