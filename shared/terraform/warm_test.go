package terraform_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"horizon/shared/terraform"
)

// warmOpts are vmOpts of one commit: with a plugin cache, the work dir is kept between steps.
func warmOpts(t *testing.T, workspace, commit string, sink terraform.Sink) terraform.PrepareOpts {
	o := vmOpts(t, workspace, 0, sink)
	o.Commit = commit
	return o
}

// step runs one step as the workers do: prepare, init, apply, close. It returns the log.
func step(t *testing.T, r *terraform.Runner, o terraform.PrepareOpts, out *lines) string {
	t.Helper()
	ctx := context.Background()
	o.Sink = out.sink
	w := prepareInit(t, r, o)
	if err := w.Apply(ctx); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.text())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.text()
}

// filesHolding lists the files under root whose content has needle.
func filesHolding(t *testing.T, root, needle string) []string {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), needle) {
			found = append(found, p)
		}
		return nil
	})
	return found
}

// TestAKeptWorkDirSkipsInitForTheSameCommit: the second step of a workspace on this host, of
// the same commit, runs no terraform init; between steps the kept dir holds no secret.
func TestAKeptWorkDirSkipsInitForTheSameCommit(t *testing.T) {
	t.Parallel()
	r, states := realRunner(t)
	root := r.WorkRoot()
	first := step(t, r, warmOpts(t, "s7-vm-0", "c1", nil), &lines{})
	if !strings.Contains(first, "has been successfully initialized") { // Terraform or OpenTofu
		t.Fatalf("the first step did not init:\n%s", first)
	}
	if leaked := filesHolding(t, root, testPassword); len(leaked) > 0 {
		t.Fatalf("the kept work dir holds the secret in %v", leaked)
	}
	second := step(t, r, warmOpts(t, "s7-vm-0", "c1", nil), &lines{})
	if strings.Contains(second, "successfully initialized") || !strings.Contains(second, "terraform init skipped") {
		t.Fatalf("the second step of the same commit ran init:\n%s", second)
	}
	if st, ok := stateOf(t, states, "s7-vm-0"); !ok || len(st.Resources) != 1 {
		t.Fatalf("state after two applies: %+v (exists %v)", st, ok)
	}
}

// TestAKeptWorkDirOfAnotherCommitIsRebuilt: a step of another commit (its module changed)
// inits afresh and runs the new code.
func TestAKeptWorkDirOfAnotherCommitIsRebuilt(t *testing.T) {
	t.Parallel()
	r, _ := realRunner(t)
	step(t, r, warmOpts(t, "s8-vm-0", "c1", nil), &lines{})
	changed := t.TempDir()
	if err := os.CopyFS(changed, os.DirFS(checkout(t, "basic"))); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(changed, "jobs", "vm", "main.tf")
	b, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, append(b, []byte("\noutput \"commit\" { value = \"c2\" }\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	o := warmOpts(t, "s8-vm-0", "c2", nil)
	o.Source = changed
	out := &lines{}
	o.Sink = out.sink
	w := prepareInit(t, r, o)
	defer closeWorkdirKept(t, w)
	if !strings.Contains(out.text(), "successfully initialized") {
		t.Fatalf("a step of another commit did not init:\n%s", out.text())
	}
	if err := w.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	outputs, err := w.Outputs(context.Background())
	if err != nil || string(outputs["commit"].Value) != `"c2"` {
		t.Fatalf("outputs %v (%v): the new commit's code did not run", outputs, err)
	}
}

// TestAWorkerKilledBetweenInitAndApply: a work dir whose worker died after init (never
// closed, its lock gone with the worker) is usable by the next attempt, and one whose init
// was cut short is rebuilt.
func TestAWorkerKilledBetweenInitAndApply(t *testing.T) {
	t.Parallel()
	r, states := realRunner(t)
	w := prepareInit(t, r, warmOpts(t, "s9-vm-0", "c1", nil))
	w.Abandon() // the worker dies: no apply, no Close; the kernel drops its flock
	second := step(t, r, warmOpts(t, "s9-vm-0", "c1", nil), &lines{})
	if !strings.Contains(second, "terraform init skipped") {
		t.Fatalf("the next attempt did not reuse the initialised dir:\n%s", second)
	}
	if st, ok := stateOf(t, states, "s9-vm-0"); !ok || len(st.Resources) != 1 {
		t.Fatalf("state after the next attempt: %+v (exists %v)", st, ok)
	}

	// Killed during init: no record of an init, so the next attempt inits again.
	cut, err := r.Prepare(context.Background(), warmOpts(t, "s10-vm-0", "c1", nil))
	if err != nil {
		t.Fatal(err)
	}
	cut.Abandon()
	third := step(t, r, warmOpts(t, "s10-vm-0", "c1", nil), &lines{})
	if !strings.Contains(third, "successfully initialized") {
		t.Fatalf("a dir never initialised was reused:\n%s", third)
	}
}

// TestTwoStepsOfAWorkspaceAtOnceDoNotShareAWorkDir: a step that finds the kept dir in use
// (another attempt still running on this host) works in a temporary one.
func TestTwoStepsOfAWorkspaceAtOnceDoNotShareAWorkDir(t *testing.T) {
	t.Parallel()
	r, _ := realRunner(t)
	a := prepareInit(t, r, warmOpts(t, "s11-vm-0", "c1", nil))
	defer closeWorkdirKept(t, a)
	b, err := r.Prepare(context.Background(), warmOpts(t, "s11-vm-0", "c1", nil))
	if err != nil {
		t.Fatal(err)
	}
	if a.Dir() == b.Dir() {
		t.Fatal("two steps of one workspace share a work dir")
	}
	closeWorkdir(t, b) // the temporary one is removed
}

func closeWorkdirKept(t *testing.T, w *terraform.Workdir) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Error(err)
	}
}

// TestKeptWorkDirsUnusedForLongArePruned: a workspace destroyed on another host, or abandoned
// by a force-remove, never comes back: a new runner removes kept dirs unused for two weeks —
// but not one in use, one used lately, or one holding an unpushed errored.tfstate.
func TestKeptWorkDirsUnusedForLongArePruned(t *testing.T) {
	t.Parallel()
	r, _ := realRunner(t)
	root := r.WorkRoot()
	for _, ws := range []string{"s12-old-0", "s12-recent-0", "s12-errored-0"} {
		step(t, r, warmOpts(t, ws, "c1", nil), &lines{})
	}
	held := prepareInit(t, r, warmOpts(t, "s12-held-0", "c1", nil))
	defer closeWorkdirKept(t, held)
	errored := filepath.Join(root, "s12-errored-0", "src", "jobs", "vm", "errored.tfstate")
	if err := os.WriteFile(errored, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-15 * 24 * time.Hour)
	for _, ws := range []string{"s12-old-0", "s12-errored-0", "s12-held-0"} {
		if err := os.Chtimes(filepath.Join(root, ws+".lock"), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := terraform.New(terraform.Config{Binary: realBinary(t), States: fixedStates{}, WorkRoot: root,
		PluginCacheDir: filepath.Join(root, "plugins")}); err != nil {
		t.Fatal(err)
	}
	for ws, want := range map[string]bool{"s12-old-0": false, "s12-recent-0": true, "s12-errored-0": true, "s12-held-0": true} {
		if _, err := os.Stat(filepath.Join(root, ws)); (err == nil) != want {
			t.Errorf("%s: kept %v, want %v", ws, err == nil, want)
		}
	}
}
