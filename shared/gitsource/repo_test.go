package gitsource_test

import (
	"os"
	"path/filepath"
	"testing"

	"horizon/shared/gitsource"
	"horizon/shared/testkit"
)

func newRepo(t testing.TB) *testkit.GitRepo { return testkit.NewGitRepo(t) }

func newCache(t testing.TB) *gitsource.Cache {
	t.Helper()
	return newCacheAt(t, cacheDir(t))
}

func newCacheAt(t testing.TB, dir string) *gitsource.Cache {
	t.Helper()
	c, err := gitsource.New(gitsource.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cacheDir returns a directory for a cache that the test's cleanup can remove although its
// trees are read-only (which only root could otherwise).
func cacheDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache")
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755) // best effort: TempDir's removal reports what is left
			}
			return nil
		})
	})
	return dir
}
