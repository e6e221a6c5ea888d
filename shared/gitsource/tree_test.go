package gitsource_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"horizon/shared/gitsource"
)

func TestTreeIsCompleteReadOnlyAndShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t)
	repo.Commit(map[string]string{"jobs/web/main.tf": "# web\n", "jobs/web/scripts/boot.sh": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(repo.Dir, "jobs/web/scripts/boot.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	commit := repo.Commit(map[string]string{"README": "x\n"})
	c := newCache(t)
	if _, err := c.Resolve(ctx, repo.URL, "main", gitsource.Credentials{}); err != nil {
		t.Fatal(err)
	}

	dir, err := c.Tree(ctx, repo.URL, commit, gitsource.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "jobs/web/main.tf"))
	if err != nil || string(got) != "# web\n" {
		t.Fatalf("main.tf = %q, %v; want %q", got, err, "# web\n")
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf(".git in the tree: stat err = %v, want not exist", err)
	}
	for name, want := range map[string]fs.FileMode{
		".":                        0o555 | fs.ModeDir,
		"jobs/web":                 0o555 | fs.ModeDir,
		"jobs/web/main.tf":         0o444,
		"jobs/web/scripts/boot.sh": 0o555,
	} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", name, info.Mode(), err, want)
		}
	}
	again, err := c.Tree(ctx, repo.URL, commit, gitsource.Credentials{})
	if err != nil || again != dir {
		t.Fatalf("second Tree = %q, %v; want %q", again, err, dir)
	}
	if st := c.Stats(); st.Fetches != 1 {
		t.Fatalf("got %d fetches, want 1 (Tree of a resolved commit does not fetch)", st.Fetches)
	}
}

func TestTreeOfKnownCommitNeedsNoNetwork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t)
	commit := repo.Commit(map[string]string{"a": "a\n"})
	c := newCache(t)
	if _, err := c.Resolve(ctx, repo.URL, "main", gitsource.Credentials{}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(repo.Dir); err != nil { // the server is gone
		t.Fatal(err)
	}
	if _, err := c.Tree(ctx, repo.URL, commit, gitsource.Credentials{}); err != nil {
		t.Fatalf("Tree of a fetched commit with the server gone: %v", err)
	}
	if _, err := c.Resolve(ctx, repo.URL, "main", gitsource.Credentials{}); !errors.Is(err, gitsource.ErrRepoNotFound) {
		t.Fatalf("Resolve with the server gone: got %v, want ErrRepoNotFound", err)
	}
}

// TestCachedAnswersOnlyForATreeAlreadyMade: Cached finds a tree once Tree has made it, the
// same directory, and nothing for a commit only fetched, another commit or an invalid one.
func TestCachedAnswersOnlyForATreeAlreadyMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t)
	first := repo.Commit(map[string]string{"a": "1\n"})
	second := repo.Commit(map[string]string{"a": "2\n"})
	c := newCache(t)
	if _, err := c.Resolve(ctx, repo.URL, "main", gitsource.Credentials{}); err != nil {
		t.Fatal(err)
	}
	if dir, ok := c.Cached(repo.URL, first); ok {
		t.Fatalf("Cached before any Tree: %q", dir)
	}
	dir, err := c.Tree(ctx, repo.URL, first, gitsource.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Cached(repo.URL, first); !ok || got != dir {
		t.Fatalf("Cached after Tree: %q, %v; want %q", got, ok, dir)
	}
	for _, commit := range []string{second, "HEAD", "../" + first} {
		if got, ok := c.Cached(repo.URL, commit); ok {
			t.Fatalf("Cached(%q) = %q, want nothing", commit, got)
		}
	}
}

func TestTreeFetchesAnUnresolvedCommitByID(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	old := repo.Commit(map[string]string{"v": "1\n"})
	repo.Commit(map[string]string{"v": "2\n"})
	dir, err := newCache(t).Tree(context.Background(), repo.URL, old, gitsource.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "v")); string(got) != "1\n" {
		t.Fatalf("v = %q, want the old commit's %q", got, "1\n")
	}
}

func TestTreeErrors(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	commit := repo.Commit(map[string]string{"a": "a\n"})
	for _, tc := range []struct {
		name, url, commit string
		want              error
	}{
		{"unknown commit", repo.URL, strings.Repeat("ab", 20), gitsource.ErrCommitNotFound},
		{"abbreviated commit", repo.URL, commit[:12], gitsource.ErrCommitNotFound},
		{"branch name instead of commit", repo.URL, "main", gitsource.ErrCommitNotFound},
		{"repository that does not exist", "file:///nonexistent/repo", commit, gitsource.ErrRepoNotFound},
		{"invalid URL", "git@example.org:r.git", commit, gitsource.ErrInvalidURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := newCache(t).Tree(context.Background(), tc.url, tc.commit, gitsource.Credentials{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestTreeRefusesLinksLeavingIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, target string
		ok           bool
	}{
		{"inside", "../a", true},
		{"absolute", "/etc/passwd", false},
		{"above the root", "../../outside", false},
		{"dangling", "nothing-here", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			repo.Commit(map[string]string{"a": "a\n", "d/keep": "k\n"})
			if err := os.Symlink(tc.target, filepath.Join(repo.Dir, "d", "link")); err != nil {
				t.Fatal(err)
			}
			commit := repo.Commit(nil)
			_, err := newCache(t).Tree(context.Background(), repo.URL, commit, gitsource.Credentials{})
			if tc.ok && err != nil || !tc.ok && !errors.Is(err, gitsource.ErrUnsafeTree) {
				t.Fatalf("link to %s: got %v, want ok=%v (else ErrUnsafeTree)", tc.target, err, tc.ok)
			}
		})
	}
}

// A process that dies half-way leaves a temporary checkout and git lock files behind; the next
// Tree must neither show the partial checkout nor trip over the locks.
func TestTreeRecoversFromACrashedCheckout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t)
	repo.Commit(map[string]string{"a": "a\n"})
	dir := cacheDir(t)
	c := newCacheAt(t, dir)
	if _, err := c.Resolve(ctx, repo.URL, "main", gitsource.Credentials{}); err != nil {
		t.Fatal(err)
	}
	second := repo.Commit(map[string]string{"b": "b\n"})

	bare, _ := filepath.Glob(filepath.Join(dir, "repos", "*.git"))
	if len(bare) != 1 {
		t.Fatalf("got bare clones %v, want one", bare)
	}
	treesOf, _ := filepath.Glob(filepath.Join(dir, "trees", "*"))
	parent := filepath.Join(dir, "trees", filepath.Base(strings.TrimSuffix(bare[0], ".git")))
	if len(treesOf) != 0 {
		t.Fatalf("trees before any Tree call: %v", treesOf)
	}
	partial := filepath.Join(parent, ".tmp-"+second+"-123")
	for _, f := range []string{filepath.Join(partial, "a"), filepath.Join(bare[0], "refs", "heads", "main.lock")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if got, err := c.Resolve(ctx, repo.URL, "main", gitsource.Credentials{}); err != nil || got != second {
		t.Fatalf("Resolve over a stale ref lock = %q, %v; want %q", got, err, second)
	}
	tree, err := c.Tree(ctx, repo.URL, second, gitsource.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(tree, "b")); string(got) != "b\n" {
		t.Fatalf("b = %q, want %q", got, "b\n")
	}
	if _, err := os.Stat(partial); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the crashed checkout is still there: %v", err)
	}
}
