package terraform_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"horizon/shared/terraform"
)

// seedDirs lists what the runner's seeds directory holds, apart from the builders' lock files.
func seedDirs(t *testing.T, r *terraform.Runner) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(r.WorkRoot(), ".seeds"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

// TestASeededModuleRunsNoInitInItsWorkDirs: once the module of a commit is seeded, the first
// step of other workspaces (here with a local module source, ../../modules) runs no terraform
// init, applies into its own state, and leaves no secret in the seed.
func TestASeededModuleRunsNoInitInItsWorkDirs(t *testing.T) {
	t.Parallel()
	r, states := realRunner(t)
	o := warmOpts(t, "s20-vm-0", "c1", nil)
	if err := r.Seed(context.Background(), terraform.SeedOpts{Source: o.Source, Module: o.Module, Commit: o.Commit}); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{"s20-vm-0", "s20-vm-1"} {
		log := step(t, r, warmOpts(t, ws, "c1", nil), &lines{})
		if strings.Contains(log, "successfully initialized") || !strings.Contains(log, "copy of this host's initialised module") {
			t.Fatalf("%s: the step of a seeded module ran init:\n%s", ws, log)
		}
		if st, ok := stateOf(t, states, ws); !ok || len(st.Resources) != 1 {
			t.Fatalf("%s: state after the apply: %+v (exists %v)", ws, st, ok)
		}
	}
	// The next step of a workspace finds its kept dir warm, as without a seed.
	if log := step(t, r, warmOpts(t, "s20-vm-1", "c1", nil), &lines{}); !strings.Contains(log, "initialised for the same commit") {
		t.Fatalf("the second step of the workspace was not warm:\n%s", log)
	}
	if leaked := filesHolding(t, r.WorkRoot(), testPassword); len(leaked) > 0 {
		t.Fatalf("the work root holds the secret in %v", leaked)
	}
	if _, ok := stateOf(t, states, "horizon-seed"); ok {
		t.Fatal("seeding wrote a state")
	}
}

// TestAnotherCommitIsNotServedByTheSeed: a step of a commit that was not seeded inits.
func TestAnotherCommitIsNotServedByTheSeed(t *testing.T) {
	t.Parallel()
	r, _ := realRunner(t)
	o := warmOpts(t, "s21-vm-0", "c1", nil)
	if err := r.Seed(context.Background(), terraform.SeedOpts{Source: o.Source, Module: o.Module, Commit: "c1"}); err != nil {
		t.Fatal(err)
	}
	if log := step(t, r, warmOpts(t, "s21-vm-0", "c2", nil), &lines{}); !strings.Contains(log, "successfully initialized") {
		t.Fatalf("a step of another commit did not init:\n%s", log)
	}
}

// TestConcurrentSeedsOfOneModuleMakeOne: callers seeding the same module at once all succeed
// and leave one seed, and nothing half-made.
func TestConcurrentSeedsOfOneModuleMakeOne(t *testing.T) {
	t.Parallel()
	r, _ := realRunner(t)
	o := warmOpts(t, "s22-vm-0", "c1", nil)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.Seed(context.Background(), terraform.SeedOpts{Source: o.Source, Module: o.Module, Commit: "c1"})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if dirs := seedDirs(t, r); len(dirs) != 1 || strings.HasPrefix(dirs[0], "tmp-") {
		t.Fatalf("seeds after 4 concurrent calls: %v", dirs)
	}
}

// TestASeedThatFailsLeavesNothing: a module that does not init is not seeded, nothing is left
// behind, and Prepare reports the module's error as without a seed.
func TestASeedThatFailsLeavesNothing(t *testing.T) {
	t.Parallel()
	r, _ := realRunner(t)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "main.tf"), []byte("this is not HCL {"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Seed(context.Background(), terraform.SeedOpts{Source: src, Module: ".", Commit: "c1"}); err == nil {
		t.Fatal("a module that does not parse was seeded")
	}
	if dirs := seedDirs(t, r); len(dirs) != 0 {
		t.Fatalf("left after a failed seed: %v", dirs)
	}
	o := warmOpts(t, "s23-vm-0", "c1", nil)
	o.Source, o.Module = src, "."
	if _, err := r.Prepare(context.Background(), o); err == nil {
		t.Fatal("Prepare accepted a module that does not parse")
	}
}

// TestASeedIsOnlyMadeWithAPluginCache: without a cache (work dirs would hold whole providers)
// Seed does nothing.
func TestASeedIsOnlyMadeWithAPluginCache(t *testing.T) {
	t.Parallel()
	r, _ := realRunner(t, true)
	o := warmOpts(t, "s24-vm-0", "c1", nil)
	if err := r.Seed(context.Background(), terraform.SeedOpts{Source: o.Source, Module: o.Module, Commit: "c1"}); err != nil {
		t.Fatal(err)
	}
	if dirs := seedDirs(t, r); len(dirs) != 0 {
		t.Fatalf("seeds without a plugin cache: %v", dirs)
	}
}

// TestASeededBuildStartsNothingButTerraform: a build in a seeded work dir runs apply straight
// from the binary, and never starts the version shim, a shell whose start would otherwise
// come before every Terraform command, under the node's build gate. A work dir that inits
// still uses the shim for init, so that terraform-exec's version check starts no Terraform.
func TestASeededBuildStartsNothingButTerraform(t *testing.T) {
	t.Parallel()
	r, _ := realRunner(t)
	ctx := context.Background()
	bin := realBinary(t)
	o := warmOpts(t, "s21-vm-0", "c1", nil)
	if err := r.Seed(ctx, terraform.SeedOpts{Source: o.Source, Module: o.Module, Commit: o.Commit}); err != nil {
		t.Fatal(err)
	}
	out := &lines{}
	o.Sink = out.sink
	w := prepareInit(t, r, o)
	if err := w.Apply(ctx); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.text())
	}
	if program, shim := w.Programs(); program != bin.Path || shim {
		t.Errorf("a seeded build ran %s (version shim started: %v), want %s alone", program, shim, bin.Path)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cold := warmOpts(t, "s21-vm-1", "c2", nil)
	w = prepareInit(t, r, cold)
	if _, shim := w.Programs(); !shim {
		t.Error("init ran without the version shim: terraform-exec's version check started Terraform")
	}
	if err := w.Apply(ctx); err != nil {
		t.Fatalf("apply after init: %v", err)
	}
	_ = w.Close()
}
