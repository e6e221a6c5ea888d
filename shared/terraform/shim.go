package terraform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// versionShim returns the program the work dirs run: a small shell script in dir that answers
// "version -json" itself, from the version FindBinary learned, and runs the binary for
// everything else. terraform-exec asks each new handle's version before its first command
// (tfexec.Terraform.Version), and a Terraform process costs 150–300 ms of start-up, mostly
// under the node's build gate: the shim makes that once per binary instead of once per step.
//
// If the script cannot be written or does not answer as expected (a work root mounted
// noexec, no /bin/sh), the binary itself is returned: slower, never wrong.
func versionShim(dir string, b Binary) string {
	out, err := json.Marshal(map[string]any{"terraform_version": b.Version, "provider_selections": map[string]string{},
		"terraform_outdated": false})
	if err != nil || strings.ContainsAny(b.Path, "'\n") {
		return b.Path
	}
	script := fmt.Sprintf(`#!/bin/sh
# Written by Horizon's workers (shared/terraform): "version -json" is answered from what
# %[1]s said when the workers started; everything else runs it.
if [ "$#" -eq 2 ] && [ "$1" = version ] && [ "$2" = -json ]; then
	printf '%%s\n' '%[2]s'
	exit 0
fi
exec '%[1]s' "$@"
`, b.Path, out)
	f, err := os.CreateTemp(dir, ".horizon-terraform-*")
	if err != nil {
		return b.Path
	}
	_, werr := f.WriteString(script)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Chmod(f.Name(), 0o700) != nil {
		_ = os.Remove(f.Name())
		return b.Path
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := exec.CommandContext(ctx, f.Name(), "version", "-json").Output()
	if err != nil || !bytes.Equal(bytes.TrimSpace(got), out) {
		_ = os.Remove(f.Name())
		return b.Path
	}
	return f.Name()
}
