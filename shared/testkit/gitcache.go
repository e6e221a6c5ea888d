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

// NewGitCache returns a git source cache configured by cfg, its Dir (unless set) a
// GitCacheDir.
func NewGitCache(t testing.TB, cfg gitsource.Config) *gitsource.Cache {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = GitCacheDir(t)
	}
	c, err := gitsource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// GitCacheDir returns a directory of the test for a git source cache (HORIZON_GIT_CACHE_DIR).
// Trees are read-only, which t.TempDir's removal cannot delete, so cleanup first makes them
// writable.
func GitCacheDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "git")
	t.Cleanup(func() { makeWritable(dir) }) // runs before TempDir's own cleanup
	return dir
}

func makeWritable(dir string) {
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(p, 0o755) // best effort: TempDir's removal reports what is left
		}
		return nil
	})
}
