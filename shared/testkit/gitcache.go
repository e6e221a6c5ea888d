package testkit

import (
	"os"
	"path/filepath"
	"testing"

	"horizon/shared/gitsource"
)

// GitCache returns a git source cache in a temporary directory of the test.
func GitCache(t testing.TB) *gitsource.Cache {
	t.Helper()
	return NewGitCache(t, gitsource.Config{})
}

// NewGitCache returns a git source cache configured by cfg, its Dir (unless set) a temporary
// directory of the test. Trees are read-only, which t.TempDir's removal cannot delete, so
// cleanup first makes them writable.
func NewGitCache(t testing.TB, cfg gitsource.Config) *gitsource.Cache {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(t.TempDir(), "git")
	}
	dir := cfg.Dir
	t.Cleanup(func() { makeWritable(dir) }) // runs before TempDir's own cleanup
	c, err := gitsource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func makeWritable(dir string) {
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(p, 0o755) // best effort: TempDir's removal reports what is left
		}
		return nil
	})
}
