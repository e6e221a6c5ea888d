package terraform

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// versionShim returns the program the work dirs run init and show with: a small shell script in
// dir that answers "version -json" itself, from the version FindBinary learned, and runs the
// binary for everything else. terraform-exec asks a handle's version before those commands
// (tfexec.Terraform.Version), and a Terraform process costs 150–300 ms of start-up: the shim
// makes that once per binary instead of once per step. The other commands run the binary
// itself (Workdir.tf): the shell would be one more process start, under the node's gate.
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
	// Named after what it answers, so that every start of the workers with this binary finds
	// the one it wrote before instead of adding another; written aside and renamed into place,
	// so that a concurrent start never runs half a script.
	sum := sha256.Sum256([]byte(script))
	name := filepath.Join(dir, ".horizon-terraform-"+hex.EncodeToString(sum[:6]))
	f, err := os.CreateTemp(dir, ".horizon-terraform-tmp-*")
	if err != nil {
		return b.Path
	}
	_, werr := f.WriteString(script)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Chmod(f.Name(), 0o700) != nil || os.Rename(f.Name(), name) != nil {
		_ = os.Remove(f.Name())
		return b.Path
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := exec.CommandContext(ctx, name, "version", "-json").Output()
	if err != nil || !bytes.Equal(bytes.TrimSpace(got), out) {
		return b.Path
	}
	return name
}
