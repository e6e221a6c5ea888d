package terraform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/hashicorp/go-version"
)

// Kind says which implementation a binary is.
type Kind string

// The implementations Horizon runs.
const (
	KindTerraform Kind = "terraform"
	KindTofu      Kind = "tofu"
)

// Minimum versions: Terraform 1.5 persists state periodically during long applies and has
// the import/removed blocks template authors use; OpenTofu forked from 1.5 and 1.6 is its first
// release.
var (
	minTerraform = version.Must(version.NewVersion("1.5.0"))
	minTofu      = version.Must(version.NewVersion("1.6.0"))
)

// ErrNoBinary is returned by FindBinary when neither terraform nor tofu is on PATH and no
// override is given. deploy/tools/ensure-terraform.sh provides one.
var ErrNoBinary = errors.New("no terraform or tofu binary on PATH (set HORIZON_TERRAFORM_BIN, or run deploy/tools/ensure-terraform.sh)")

// Binary is a Terraform-compatible executable.
type Binary struct {
	Path    string // absolute path
	Kind    Kind
	Version string // e.g. "1.11.4" or "1.12.6-dev"
}

// FindBinary returns the binary Horizon runs: override (the value of HORIZON_TERRAFORM_BIN, a
// path or a name looked up on PATH) when it is not empty, otherwise terraform, otherwise tofu
// from PATH. It runs "<binary> version" to learn the kind and version, and returns an error
// when the binary cannot be run or is older than Terraform 1.5 or OpenTofu 1.6; ErrNoBinary
// when nothing is found.
func FindBinary(ctx context.Context, override string) (Binary, error) {
	var candidates []string
	if override != "" {
		candidates = []string{override}
	} else {
		candidates = []string{"terraform", "tofu"}
	}
	for _, name := range candidates {
		path, err := exec.LookPath(name)
		if err != nil {
			if override != "" {
				return Binary{}, fmt.Errorf("HORIZON_TERRAFORM_BIN %q: %w", override, err)
			}
			continue
		}
		return probe(ctx, path)
	}
	return Binary{}, ErrNoBinary
}

// probe runs "path version" and parses the line "Terraform v1.11.4" or "OpenTofu v1.12.6". The
// plain output is used rather than -json because only it names the implementation. The line is
// looked for rather than taken first: OpenTofu prints CLI configuration warnings before it.
func probe(ctx context.Context, path string) (Binary, error) {
	cmd := exec.CommandContext(ctx, path, "version")
	// No update check over the network, which could hang without internet.
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Binary{}, fmt.Errorf("run %s version: %w: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	b := Binary{Path: path}
	var name, v string
	for line := range strings.Lines(string(out)) {
		if n, rest, ok := strings.Cut(strings.TrimSpace(line), " v"); ok && (n == "Terraform" || n == "OpenTofu") {
			name, v = n, rest
			break
		}
	}
	var min *version.Version
	switch name {
	case "Terraform":
		b.Kind, min = KindTerraform, minTerraform
	case "OpenTofu":
		b.Kind, min = KindTofu, minTofu
	default:
		return Binary{}, fmt.Errorf("%s is neither Terraform nor OpenTofu: version says %q", path, strings.TrimSpace(string(out)))
	}
	parsed, err := version.NewVersion(v)
	if err != nil {
		return Binary{}, fmt.Errorf("%s: parse version %q: %w", path, v, err)
	}
	b.Version = parsed.String()
	// A pre-release such as 1.12.6-dev counts as its release for the minimum.
	if parsed.Core().LessThan(min) {
		return Binary{}, fmt.Errorf("%s is %s %s; Horizon needs terraform >= %s or tofu >= %s", path, name, b.Version, minTerraform, minTofu)
	}
	return b, nil
}
