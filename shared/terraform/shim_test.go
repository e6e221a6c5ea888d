package terraform_test

import (
	"path/filepath"
	"testing"

	"horizon/shared/terraform"
)

// TestRestartsReuseOneVersionShim: every start of the workers on a work root finds the version
// shim the last one wrote, so the root does not collect one per start.
func TestRestartsReuseOneVersionShim(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for range 3 {
		if _, err := terraform.New(terraform.Config{Binary: realBinary(t), States: fixedStates{}, WorkRoot: root}); err != nil {
			t.Fatal(err)
		}
	}
	shims, err := filepath.Glob(filepath.Join(root, ".horizon-terraform-*"))
	if err != nil || len(shims) != 1 {
		t.Fatalf("after three starts the work root holds %v (%v), want one shim", shims, err)
	}
}
