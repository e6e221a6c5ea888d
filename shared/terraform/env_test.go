package terraform

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestBuildEnvDropsMissingCLIConfig(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope.tfrc")
	env, err := buildEnv([]string{"PATH=/bin", "TF_CLI_CONFIG_FILE=" + missing}, Config{ConnString: "x", Schema: "terraform"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := env["TF_CLI_CONFIG_FILE"]; ok {
		t.Fatalf("TF_CLI_CONFIG_FILE=%s kept although the file does not exist", v)
	}
}

func TestIsContention(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]bool{
		"failed to lock state in Postgres: Already locked for workspace creation: s3-worker-5":                true,
		"Cannot lock workspace; already locked for workspace creation: s1":                                    true,
		`Error: pq: type "states" already exists (42710)`:                                                     true,
		`pq: duplicate key value violates unique constraint "pg_namespace_nspname_index"`:                     true,
		`Workspace "s1-vm-0" already exists`:                                                                  false,
		"Error acquiring the state lock: Workspace is already locked: s1-vm-0":                                false,
		"Error: Invalid reference: A reference to a resource type must be followed by at least one attribute": false,
	} {
		if got := isContention(errors.New(msg)); got != want {
			t.Errorf("isContention(%q) = %v, want %v", msg, got, want)
		}
	}
}
