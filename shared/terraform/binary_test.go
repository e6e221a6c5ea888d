package terraform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"horizon/shared/terraform"
)

// fakeVersion writes an executable named name into dir that prints out for "version".
func fakeVersion(t *testing.T, dir, name, out string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	script := "#!/bin/sh\nprintf '" + strings.ReplaceAll(out, "\n", "\\n") + "\\n'\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFindBinaryReadsKindAndVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		out     string
		kind    terraform.Kind
		version string
		err     string
	}{
		{out: "Terraform v1.11.4", kind: terraform.KindTerraform, version: "1.11.4"},
		{out: "Terraform v1.5.0", kind: terraform.KindTerraform, version: "1.5.0"},
		{out: "OpenTofu v1.12.6-dev", kind: terraform.KindTofu, version: "1.12.6-dev"},
		{out: "OpenTofu v1.6.0", kind: terraform.KindTofu, version: "1.6.0"},
		{out: "Terraform v1.4.7", err: "needs terraform >= 1.5.0"},
		{out: "OpenTofu v1.5.7", err: "needs terraform >= 1.5.0 or tofu >= 1.6.0"},
		{out: "Pulumi v3.0.0", err: "neither Terraform nor OpenTofu"},
		// OpenTofu prints CLI configuration warnings before its version.
		{out: "\nWarning: Unable to open CLI configuration file\n\nOpenTofu v1.10.6\non linux_amd64", kind: terraform.KindTofu, version: "1.10.6"},
	}
	for i, tc := range tests {
		path := fakeVersion(t, dir, "bin"+string(rune('a'+i)), tc.out)
		b, err := terraform.FindBinary(context.Background(), path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: got %+v, %v; want an error mentioning %q", tc.out, b, err, tc.err)
			}
			continue
		}
		if err != nil || b.Kind != tc.kind || b.Version != tc.version || b.Path != path {
			t.Errorf("%q: got %+v, %v; want %s %s at %s", tc.out, b, err, tc.kind, tc.version, path)
		}
	}
}

func TestFindBinarySearchesPath(t *testing.T) {
	// t.Setenv: not parallel.
	onlyTofu := t.TempDir()
	fakeVersion(t, onlyTofu, "tofu", "OpenTofu v1.10.6")
	t.Setenv("PATH", onlyTofu)
	b, err := terraform.FindBinary(context.Background(), "")
	if err != nil || b.Kind != terraform.KindTofu || b.Path != filepath.Join(onlyTofu, "tofu") {
		t.Fatalf("with only tofu on PATH: got %+v, %v", b, err)
	}

	both := t.TempDir()
	fakeVersion(t, both, "tofu", "OpenTofu v1.10.6")
	fakeVersion(t, both, "terraform", "Terraform v1.11.4")
	t.Setenv("PATH", both)
	if b, err := terraform.FindBinary(context.Background(), ""); err != nil || b.Kind != terraform.KindTerraform {
		t.Fatalf("with both on PATH: got %+v, %v; want terraform first", b, err)
	}
	if b, err := terraform.FindBinary(context.Background(), "tofu"); err != nil || b.Kind != terraform.KindTofu {
		t.Fatalf("override by name: got %+v, %v; want tofu", b, err)
	}

	t.Setenv("PATH", t.TempDir())
	if _, err := terraform.FindBinary(context.Background(), ""); !errors.Is(err, terraform.ErrNoBinary) {
		t.Fatalf("with neither: got %v, want ErrNoBinary", err)
	}
	if _, err := terraform.FindBinary(context.Background(), "/does/not/exist"); err == nil || !strings.Contains(err.Error(), "HORIZON_TERRAFORM_BIN") {
		t.Fatalf("missing override: got %v", err)
	}
}

func TestFindBinaryRealBinary(t *testing.T) {
	t.Parallel()
	b := realBinary(t)
	if b.Kind != terraform.KindTerraform && b.Kind != terraform.KindTofu {
		t.Fatalf("kind %q", b.Kind)
	}
	t.Logf("using %s %s at %s", b.Kind, b.Version, b.Path)
}
