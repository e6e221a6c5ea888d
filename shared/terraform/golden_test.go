package terraform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"horizon/shared/secrets"
	"horizon/shared/terraform"
	"horizon/shared/testkit"
)

// fixedStates stands in for the state backend of the fake binary, which saves nothing: its
// grant is fixed, so that the golden environment is stable, and its state holds the outputs.
type fixedStates struct{}

func (fixedStates) Grant(workspace string) (map[string]string, func()) {
	return map[string]string{
		"TF_HTTP_ADDRESS":  "http://127.0.0.1:1/states/" + workspace,
		"TF_HTTP_USERNAME": "user", "TF_HTTP_PASSWORD": "grant-password",
	}, func() {}
}

func (fixedStates) Read(context.Context, string) ([]byte, error) {
	return []byte(`{"version":4,"outputs":{"admin_password":{"sensitive":true,"type":"string","value":"fake-secret-value"},` +
		`"name":{"sensitive":false,"type":"string","value":"vm-x"}},"resources":[]}`), nil
}

func (fixedStates) Delete(context.Context, string) error { return nil }

// fakeRunner returns a Runner over testdata/fake-terraform, which records the commands
// terraform-exec builds, and the files those records go to.
func fakeRunner(t *testing.T, mode string) (r *terraform.Runner, log, envFile, tmp string) {
	t.Helper()
	tmp = t.TempDir()
	fake, err := filepath.Abs("testdata/fake-terraform")
	if err != nil {
		t.Fatal(err)
	}
	log, envFile = filepath.Join(tmp, "commands"), filepath.Join(tmp, "env")
	cliConfig := filepath.Join(tmp, "terraformrc")
	if err := os.WriteFile(cliConfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = terraform.New(terraform.Config{
		Binary:         terraform.Binary{Path: fake, Kind: terraform.KindTerraform, Version: "1.11.4"},
		States:         fixedStates{},
		WorkRoot:       filepath.Join(tmp, "work"),
		PluginCacheDir: filepath.Join(tmp, "plugins"),
		GracePeriod:    300 * time.Millisecond,
		Env:            map[string]string{"PROXMOX_VE_ENDPOINT": "https://pve.example:8006/"},
		// A fixed worker environment, so that the golden file shows what is kept and dropped.
		BaseEnv: []string{
			"PATH=/usr/bin:/bin", "HOME=/home/worker", "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
			"HORIZON_SECRET_KEY=must-not-leak", "HORIZON_DATABASE_URL=postgres://secret@db/horizon",
			"AWS_SECRET_ACCESS_KEY=must-not-leak",
			"TF_CLI_CONFIG_FILE=" + cliConfig, "TF_TOKEN_registry_example=tok",
			"TF_LOG=TRACE", "TF_VAR_admin_password=must-not-leak", "TF_WORKSPACE=other",
			"TF_DATA_DIR=/elsewhere", "TF_HTTP_PASSWORD=must-not-leak", "TF_PLUGIN_CACHE_DIR=/wrong",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, log, envFile, tmp
}

func fakeOpts(t *testing.T, log, envFile string, sink terraform.Sink) terraform.PrepareOpts {
	return terraform.PrepareOpts{
		Source:    checkout(t, "basic"),
		Module:    "jobs/vm",
		Workspace: "s1-vm-0",
		Vars: map[string]any{
			"horizon_name":   "web-0",
			"admin_password": secrets.Value("fake-secret-value"),
		},
		Env: map[string]string{
			"FAKE_TF_LOG":          log,
			"FAKE_TF_ENV":          envFile,
			"PROXMOX_VE_API_TOKEN": "root@pam!horizon=token",
		},
		Sink: sink,
	}
}

// normalize replaces the paths of one test run by stable placeholders.
func normalize(b []byte, w *terraform.Workdir, tmp string) []byte {
	s := strings.ReplaceAll(string(b), w.Dir(), "$MODULE")
	s = strings.ReplaceAll(s, tmp, "$TMP")
	return []byte(s)
}

// TestCommandsAndEnvGolden records every command line a work dir's life runs, and the
// environment Terraform gets, and compares them with golden files.
func TestCommandsAndEnvGolden(t *testing.T) {
	t.Parallel()
	r, log, envFile, tmp := fakeRunner(t, "")
	var out lines
	ctx := context.Background()
	w, err := r.Prepare(ctx, fakeOpts(t, log, envFile, out.sink))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Init(ctx); err != nil {
		t.Fatal(err)
	}
	changed, err := w.Plan(ctx)
	if err != nil || !changed {
		t.Fatalf("Plan = %v, %v; want changed", changed, err)
	}
	if err := w.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	outputs, err := w.Outputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o := outputs["admin_password"]; !o.Sensitive || string(o.Value) != `"fake-secret-value"` {
		t.Fatalf("admin_password output = %+v", o)
	}
	if err := w.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteWorkspace(ctx); err != nil {
		t.Fatal(err)
	}

	commands, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "commands.golden", normalize(commands, w, tmp))

	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, kv := range strings.Split(strings.TrimSpace(string(env)), "\n") {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PWD", "OLDPWD", "SHLVL", "_": // set by the shell running the fake
			continue
		}
		kept = append(kept, kv)
	}
	testkit.Golden(t, "env.golden", normalize([]byte(strings.Join(kept, "\n")+"\n"), w, tmp))
	if strings.Contains(string(env), "must-not-leak") || strings.Contains(string(commands), "grant-password") {
		t.Fatal("a worker secret reached Terraform's environment, or the state credentials its arguments")
	}

	vars, err := os.ReadFile(filepath.Join(w.Dir(), terraform.VarsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(vars), `"admin_password": "fake-secret-value"`) {
		t.Fatalf("a secrets.Value was not written in clear to the variables file:\n%s", vars)
	}
	backend, err := os.ReadFile(filepath.Join(w.Dir(), terraform.BackendFile))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, terraform.BackendFile, backend)

	// The output command's JSON holds the sensitive value; it must not reach the sink.
	if strings.Contains(out.text(), "fake-secret-value") {
		t.Fatalf("the sensitive output reached the sink:\n%s", out.text())
	}
	for _, want := range []string{"stdout: apply started", "stdout: Plan: 1 to add, 0 to change, 0 to destroy."} {
		if !strings.Contains(out.text(), want) {
			t.Errorf("sink lacks %q:\n%s", want, out.text())
		}
	}
	if strings.Contains(out.text(), "terraform_version") {
		t.Errorf("the version check's JSON reached the sink:\n%s", out.text())
	}
	closeWorkdir(t, w)
}

func TestVarsFileGolden(t *testing.T) {
	t.Parallel()
	r, log, envFile, _ := fakeRunner(t, "")
	ctx := context.Background()
	w, err := r.Prepare(ctx, terraform.PrepareOpts{
		Source:    checkout(t, "vars"),
		Workspace: "s7-db-2",
		Vars: map[string]any{
			"horizon_name": "db-2",
			"horizon_address": map[string]any{
				"ip": "10.0.0.12", "prefix": 24, "gateway": "10.0.0.1",
				"dns": []any{"10.0.0.53", "10.0.1.53"}, "name": "db-2",
			},
			"horizon_tags":   []string{"team-a", "prod"},
			"horizon_vmid":   4012,
			"admin_password": secrets.Value(`p"a<s>s\w&rd`),
			"settings":       map[string]any{"nested": map[string]any{"token": secrets.Value("tok-123")}, "list": []any{1, "two", true}},
			// Not declared by the module: must not be written.
			"horizon_node": "pve-1", "horizon_pool": "prod", "undeclared": "x",
		},
		Env: map[string]string{"FAKE_TF_LOG": log, "FAKE_TF_ENV": envFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWorkdir(t, w)
	got, err := os.ReadFile(filepath.Join(w.Dir(), terraform.VarsFile))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, terraform.VarsFile, got)
}

func TestPrepareRejects(t *testing.T) {
	t.Parallel()
	r, log, envFile, tmp := fakeRunner(t, "")
	ok := fakeOpts(t, log, envFile, nil)
	tests := []struct {
		name   string
		modify func(o *terraform.PrepareOpts)
		want   string
	}{
		{"missing required variable", func(o *terraform.PrepareOpts) { delete(o.Vars, "admin_password") }, "without a value: admin_password"},
		{"bad workspace", func(o *terraform.PrepareOpts) { o.Workspace = "../x" }, "workspace name"},
		{"module outside source", func(o *terraform.PrepareOpts) { o.Module = "../../etc" }, "outside the source"},
		{"missing module", func(o *terraform.PrepareOpts) { o.Module = "jobs/nope" }, "not found"},
		{"tfexec-managed env", func(o *terraform.PrepareOpts) { o.Env = map[string]string{"TF_VAR_x": "1"} }, "TF_VAR_x"},
		{"hidden secret", func(o *terraform.PrepareOpts) {
			o.Vars["admin_password"] = []secrets.Value{"x"} // would be written as "[redacted]"
		}, "secrets.Value"},
		{"horizon-managed env", func(o *terraform.PrepareOpts) { o.Env = map[string]string{"TF_HTTP_ADDRESS": "http://elsewhere"} }, "TF_HTTP_ADDRESS"},
	}
	// The runner's own files (its version shim) are there from the start.
	before, err := os.ReadDir(filepath.Join(tmp, "work"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			o.Vars = map[string]any{"horizon_name": "x", "admin_password": "y"}
			tc.modify(&o)
			_, err := r.Prepare(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	entries, err := os.ReadDir(filepath.Join(tmp, "work"))
	if err != nil || len(entries) != len(before) {
		t.Fatalf("failed Prepares left %d entries in the work root (%v)", len(entries)-len(before), err)
	}
}

// TestCancelKillsAfterGracePeriod uses a fake that ignores SIGINT: after the grace period it
// must be killed, and Apply must return a context error.
func TestCancelKillsAfterGracePeriod(t *testing.T) {
	t.Parallel()
	r, log, envFile, _ := fakeRunner(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lines{onLine: func(line string) {
		if line == "apply started" {
			cancel()
		}
	}}
	opts := fakeOpts(t, log, envFile, out.sink)
	opts.Env["FAKE_TF_MODE"] = "ignore-int"
	w, err := r.Prepare(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer closeWorkdir(t, w)
	start := time.Now()
	err = w.Apply(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply after cancel: got %v, want context.Canceled", err)
	}
	// The fake would sleep 60 s; only the kill can end it this early.
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("Apply returned after %s: the process was not killed after the grace period", d)
	}
}
