package lint

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxCommittedBytes is the size past which a committed file must live under a testdata folder:
// the repository carries source, not build products or data dumps.
const maxCommittedBytes = 1 << 20

// TestNoBinariesOrLargeFilesCommitted refuses compiled programs (ELF, Mach-O, PE, a Go test
// binary) anywhere, and files over 1 MiB outside testdata/. A `go build` in the clone's root
// leaves a binary beside go.mod that `git add -A` would otherwise take along.
func TestNoBinariesOrLargeFilesCommitted(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	top := strings.TrimSpace(string(root))
	out, err := exec.Command("git", "-C", top, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var checked int
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		info, err := os.Stat(filepath.Join(top, name))
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		checked++
		if info.Size() > maxCommittedBytes && !inTestdata(name) {
			t.Errorf("%s is %d bytes: files over %d bytes belong under a testdata/ folder or outside the repository", name, info.Size(), maxCommittedBytes)
		}
		if kind := executableKind(filepath.Join(top, name)); kind != "" {
			t.Errorf("%s is a compiled %s program: build products are not committed", name, kind)
		}
	}
	if checked == 0 {
		t.Fatal("git ls-files listed no file")
	}
}

func inTestdata(name string) bool {
	return strings.HasPrefix(name, "testdata/") || strings.Contains(name, "/testdata/")
}

// executableKind names the object format of a compiled program by its magic number, or "".
func executableKind(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 4)
	if n, _ := f.Read(head); n < 4 {
		return ""
	}
	switch {
	case bytes.Equal(head, []byte{0x7f, 'E', 'L', 'F'}):
		return "ELF"
	case bytes.Equal(head, []byte{0xcf, 0xfa, 0xed, 0xfe}), bytes.Equal(head, []byte{0xfe, 0xed, 0xfa, 0xcf}):
		return "Mach-O"
	case bytes.Equal(head[:2], []byte{'M', 'Z'}):
		return "PE"
	}
	return ""
}
