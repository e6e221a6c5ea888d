package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestRegisterDemoKeyOnce: `up` leaves the admin with one SSH key "demo" whose private half is
// the printed file (mode 0600), however often it runs; the form's key list is never empty.
func TestRegisterDemoKeyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := apitest.New(t, nil)
	data := t.TempDir()
	var path string
	for range 2 {
		var err error
		if path, err = registerDemoKey(ctx, s.URL, s.Admin, data); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 || filepath.Dir(path) != data {
		t.Fatalf("private key %s: %v, %v; want a 0600 file under the data directory", path, info, err)
	}
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	keys := s.Do("GET", "/v1/ssh-keys", apitest.Req{}).Map()["items"].([]any)
	if len(keys) != 1 {
		t.Fatalf("%d SSH keys after two runs, want 1: %v", len(keys), keys)
	}
	k := keys[0].(map[string]any)
	if k["name"] != "demo" || k["user_id"] != s.AdminID.String() || !strings.HasPrefix(string(pub), k["public_key"].(string)[:60]) {
		t.Fatalf("registered key %v does not match %s", k, pub)
	}
}

// TestSignInLinkCarriesACode: the link `up` prints holds a one-time code, not the token, and
// the code signs in as the admin.
func TestSignInLinkCarriesACode(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, nil)
	link, err := signInLink(context.Background(), s.URL, s.Admin, "http://127.0.0.1:8090")
	if err != nil {
		t.Fatal(err)
	}
	code, ok := strings.CutPrefix(link, "http://127.0.0.1:8090/#code=")
	if !ok || strings.Contains(link, s.Admin) {
		t.Fatalf("link %q: want http://127.0.0.1:8090/#code=… without the token", link)
	}
	r := s.Do("POST", "/v1/sign-in", apitest.Req{Token: apitest.NoToken, Body: map[string]any{"code": code}})
	if r.Status != 200 || r.Map()["token"] != s.Admin {
		t.Fatalf("exchange: %d %s", r.Status, r.Body)
	}
}
