package terraform

import (
	"path/filepath"
	"testing"
)

func TestBuildEnvDropsMissingCLIConfig(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope.tfrc")
	env, err := buildEnv([]string{"PATH=/bin", "TF_CLI_CONFIG_FILE=" + missing}, Config{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := env["TF_CLI_CONFIG_FILE"]; ok {
		t.Fatalf("TF_CLI_CONFIG_FILE=%s kept although the file does not exist", v)
	}
}
