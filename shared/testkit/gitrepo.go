package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GitRepo is a git repository a test creates in a temporary directory and commits to; URL is
// its file:// URL.
type GitRepo struct {
	t   testing.TB
	Dir string
	URL string
}

// NewGitRepo initialises an empty repository whose first branch is main.
func NewGitRepo(t testing.TB) *GitRepo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "origin")
	r := &GitRepo{t: t, Dir: dir, URL: "file://" + dir}
	r.Git("init", "--quiet", "--initial-branch=main", dir)
	return r
}

// Git runs git in the repository, with no user or system configuration, and returns its
// trimmed output; a failure fails the test.
func (r *GitRepo) Git(args ...string) string {
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

// Commit writes files (path → content; an empty content removes the file; a path ending in
// ".sh" is made executable) and commits them on the current branch. It returns the commit id.
func (r *GitRepo) Commit(files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.Dir, name)
		if content == "" {
			r.Git("rm", "--quiet", name)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			r.t.Fatal(err)
		}
	}
	r.Git("add", "--all")
	r.Git("commit", "--quiet", "--allow-empty", "-m", "change")
	return r.Git("rev-parse", "HEAD")
}
