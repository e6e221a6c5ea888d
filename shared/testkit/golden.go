package testkit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is set by `go test ./… -update`: golden files are rewritten instead of compared.
var update = flag.Bool("update", false, "rewrite golden files in testdata/ instead of comparing with them")

// Golden compares got with the file testdata/<name>, or rewrites the file when the test runs
// with -update. Review rewritten files in the diff.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what the code produces now (run with -update and review the diff)\ngot:\n%s", path, got)
	}
}
