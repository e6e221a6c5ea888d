package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"horizon/functions/apitest"
)

// copyExample copies the repository's deploy/examples/sandbox-vm under a new root.
func copyExample(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dst := filepath.Join(root, "deploy", "examples")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", "../examples/sandbox-vm", dst).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	return root
}

func TestRegisterExampleOnceThenOnChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := apitest.New(t, nil)
	root, data := copyExample(t), t.TempDir()
	latest := func() (count int, version float64) {
		t.Helper()
		l := s.Do("GET", "/v1/templates", apitest.Req{}).Map()["items"].([]any)
		if len(l) == 0 {
			return 0, 0
		}
		return len(l), l[0].(map[string]any)["latest_version"].(float64)
	}

	for range 2 {
		if err := registerExample(ctx, s.URL, s.Admin, root, data); err != nil {
			t.Fatal(err)
		}
	}
	if n, v := latest(); n != 1 || v != 1 {
		t.Fatalf("after two registrations: %d templates, latest version %v; want one template at version 1", n, v)
	}

	script := filepath.Join(root, "deploy/examples/sandbox-vm/jobs/app/scripts/configure.sh")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env bash\necho changed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := registerExample(ctx, s.URL, s.Admin, root, data); err != nil {
		t.Fatal(err)
	}
	if n, v := latest(); n != 1 || v != 2 {
		t.Fatalf("after a change: %d templates, latest version %v; want version 2", n, v)
	}
}
