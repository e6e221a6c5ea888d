package gitsource_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"horizon/shared/gitsource"
)

// testRepo is a git repository a test creates and commits to, served by its file:// URL.
type testRepo struct {
	t   testing.TB
	Dir string
	URL string
}

func newRepo(t testing.TB) *testRepo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "origin")
	r := &testRepo{t: t, Dir: dir, URL: "file://" + dir}
	r.git("init", "--quiet", "--initial-branch=main", dir)
	return r
}

// git runs git in the repository with a hermetic environment and returns its trimmed output.
func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	if _, err := os.Stat(r.Dir); err == nil {
		cmd.Dir = r.Dir
	}
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + r.Dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org",
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files (path → content; an empty content removes the file) and commits them on
// the current branch, returning the commit id.
func (r *testRepo) commit(files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.Dir, name)
		if content == "" {
			r.git("rm", "--quiet", name)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("add", "--all")
	r.git("commit", "--quiet", "--allow-empty", "-m", "change")
	return r.git("rev-parse", "HEAD")
}

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
