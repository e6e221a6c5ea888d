package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"horizon/deploy/sandbox/pve"
	"horizon/shared/testkit"
)

// syncBuffer is a bytes.Buffer safe to write from run's goroutine and read from the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestDemoConfigLoads(t *testing.T) {
	cfg, err := pve.LoadConfig("demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Clusters) != 1 || len(cfg.Clusters[0].Nodes) != 3 || cfg.Clusters[0].Name != "demo" {
		t.Fatalf("demo config: %+v", cfg.Clusters)
	}
}

// TestRunWritesStateFile runs the command on a config with random ports and checks the
// state file a dev script reads.
func TestRunWritesStateFile(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "sandbox.yaml")
	if err := os.WriteFile(config, []byte(`
task_duration: 10ms
vm_ssh_port: 0
admin_token: secret-admin
clusters:
  - name: lab
    tokens: [{ id: "horizon@pve!test", secret: "s3cret" }]
    nodes: [{ name: alpha }, { name: beta }]
    storages:
      - { name: local, type: dir, path: /var/lib/vz, content: [iso, snippets, import] }
      - { name: local-lvm, type: lvmthin, content: [images] }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "out", "sandbox.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-config", config, "-state", state, "-data", filepath.Join(dir, "data")}, &out)
	}()
	var st pve.State
	testkit.Eventually(t, 20*time.Second, "the state file is written", func() bool {
		b, err := os.ReadFile(state)
		return err == nil && json.Unmarshal(b, &st) == nil
	})
	c := st.Clusters[0]
	if st.AdminToken != "secret-admin" || c.Name != "lab" || c.TokenID != "horizon@pve!test" || c.TokenSecret != "s3cret" ||
		!strings.HasPrefix(c.APIURL, "https://127.0.0.1:") || len(c.CertFingerprint) != 95 || !strings.Contains(c.CACertPEM, "BEGIN CERTIFICATE") {
		t.Fatalf("state: %+v", st)
	}
	if len(c.Nodes) != 2 || c.Nodes[1].Name != "beta" || !strings.HasPrefix(c.Nodes[1].HostKeyFingerprint, "SHA256:") || c.Nodes[1].SSHAddr == "" {
		t.Fatalf("nodes: %+v", c.Nodes)
	}
	if !strings.Contains(out.String(), c.CertFingerprint) || !strings.Contains(out.String(), "horizon@pve!test=s3cret") {
		t.Fatalf("printed: %s", out.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop after its context ended")
	}
}
