package gitsource_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"horizon/shared/gitsource"
)

func TestResolveFetchesOnlyNewCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t)
	first := repo.Commit(map[string]string{"main.tf": "# one\n"})
	c := newCache(t)

	got, err := c.Resolve(ctx, repo.URL, "main", gitsource.Credentials{})
	if err != nil || got != first {
		t.Fatalf("Resolve = %q, %v; want %q", got, err, first)
	}
	if st := c.Stats(); st.Fetches != 1 || st.Listings != 1 {
		t.Fatalf("cold resolve: got %+v, want 1 listing and 1 fetch", st)
	}
	if got, err = c.Resolve(ctx, repo.URL, "main", gitsource.Credentials{}); err != nil || got != first {
		t.Fatalf("second Resolve = %q, %v; want %q", got, err, first)
	}
	if st := c.Stats(); st.Fetches != 1 || st.Listings != 2 {
		t.Fatalf("warm resolve: got %+v, want 2 listings and still 1 fetch", st)
	}
	second := repo.Commit(map[string]string{"main.tf": "# two\n"})
	if got, err = c.Resolve(ctx, repo.URL, "main", gitsource.Credentials{}); err != nil || got != second {
		t.Fatalf("Resolve after a new commit = %q, %v; want %q", got, err, second)
	}
	if st := c.Stats(); st.Fetches != 2 {
		t.Fatalf("after a new commit: got %d fetches, want 2", st.Fetches)
	}
}

func TestResolveBranchOtherThanMain(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	repo.Commit(map[string]string{"a": "a\n"})
	repo.Git("checkout", "--quiet", "-b", "release/1.x")
	rel := repo.Commit(map[string]string{"b": "b\n"})
	// A branch whose name ends like the one asked for must not be taken for it.
	repo.Git("checkout", "--quiet", "-b", "x/release/1.x")
	repo.Commit(map[string]string{"c": "c\n"})

	got, err := newCache(t).Resolve(context.Background(), repo.URL, "release/1.x", gitsource.Credentials{})
	if err != nil || got != rel {
		t.Fatalf("Resolve = %q, %v; want %q", got, err, rel)
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	repo.Commit(map[string]string{"a": "a\n"})
	missing := "file://" + filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct {
		name, url, branch string
		want              error
	}{
		{"repository that does not exist", missing, "main", gitsource.ErrRepoNotFound},
		{"branch that does not exist", repo.URL, "nope", gitsource.ErrBranchNotFound},
		{"invalid branch name", repo.URL, "a..b", gitsource.ErrBranchNotFound},
		{"option-like branch", repo.URL, "--upload-pack=touch /tmp/x", gitsource.ErrBranchNotFound},
		{"scheme not allowed", "http://example.org/r.git", "main", gitsource.ErrInvalidURL},
		{"ext transport", "ext::sh -c touch% /tmp/pwned", "main", gitsource.ErrInvalidURL},
		{"option as URL", "--upload-pack=touch /tmp/pwned", "main", gitsource.ErrInvalidURL},
		{"ssh without a pinned host key", "ssh://git@127.0.0.1:1/r.git", "main", gitsource.ErrHostKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := newCache(t).Resolve(context.Background(), tc.url, tc.branch, gitsource.Credentials{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestResolveHonoursContext(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	repo.Commit(map[string]string{"a": "a\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newCache(t).Resolve(ctx, repo.URL, "main", gitsource.Credentials{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// TestResolveBranchesListsAndFetchesOnce: the branches of one repository are resolved with one
// listing and one fetch, a branch the repository lacks is an error of its own that leaves the
// others resolved, and on a warm cache nothing is fetched.
func TestResolveBranchesListsAndFetchesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t)
	main := repo.Commit(map[string]string{"a": "a\n"})
	repo.Git("checkout", "--quiet", "-b", "release/1.x")
	rel := repo.Commit(map[string]string{"b": "b\n"})
	c := newCache(t)

	for i, want := range []gitsource.Stats{{Listings: 1, Fetches: 1}, {Listings: 2, Fetches: 1}} {
		got := c.ResolveBranches(ctx, repo.URL, []string{"main", "release/1.x", "gone", "main"}, gitsource.Credentials{})
		if len(got) != 3 || got["main"].Commit != main || got["main"].Err != nil || got["release/1.x"].Commit != rel ||
			got["release/1.x"].Err != nil || !errors.Is(got["gone"].Err, gitsource.ErrBranchNotFound) {
			t.Fatalf("pass %d: got %+v; want main %s, release/1.x %s, gone not found", i+1, got, main, rel)
		}
		if st := c.Stats(); st != want {
			t.Fatalf("pass %d: got %+v, want %+v", i+1, st, want)
		}
	}
}
