package gitsource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"horizon/shared/gitsource"
)

// TestMain doubles as a worker process for TestConcurrentProcesses: with HELPER_CACHE set, the
// test binary resolves and checks out one branch in that cache and prints its Stats.
func TestMain(m *testing.M) {
	if dir := os.Getenv("HELPER_CACHE"); dir != "" {
		os.Exit(helperProcess(dir, os.Getenv("HELPER_REPO"), os.Getenv("HELPER_BARRIER")))
	}
	os.Exit(m.Run())
}

func helperProcess(dir, repoURL, barrier string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := gitsource.New(gitsource.Config{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Start together, so that the two processes contend for the repository's lock.
	if err := os.WriteFile(filepath.Join(barrier, fmt.Sprint(os.Getpid())), nil, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for {
		if entries, _ := os.ReadDir(barrier); len(entries) >= 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	commit, err := c.Resolve(ctx, repoURL, "main", gitsource.Credentials{})
	if err == nil {
		_, err = c.Tree(ctx, repoURL, commit, gitsource.Credentials{})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(c.Stats()) // a failed write shows as the parent's decode error
	return 0
}

func TestConcurrentProcessesFetchOnce(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	repo.Commit(map[string]string{"main.tf": "# x\n"})
	dir := cacheDir(t)
	barrier := t.TempDir()

	type result struct {
		out []byte
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "HELPER_CACHE="+dir, "HELPER_REPO="+repo.URL, "HELPER_BARRIER="+barrier)
			out, err := cmd.Output()
			if ee, ok := err.(*exec.ExitError); ok {
				err = fmt.Errorf("%v: %s", err, ee.Stderr)
			}
			results <- result{out, err}
		}()
	}
	var total gitsource.Stats
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("helper process: %v", r.err)
		}
		var st gitsource.Stats
		if err := json.Unmarshal(r.out, &st); err != nil {
			t.Fatalf("helper output %q: %v", r.out, err)
		}
		total.Fetches += st.Fetches
		total.Listings += st.Listings
	}
	if total.Fetches != 1 || total.Listings != 2 {
		t.Fatalf("two processes on a cold cache: got %+v, want 2 listings and exactly 1 fetch", total)
	}
}

func TestConcurrentGoroutinesShareFetchesAndTrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t)
	commit := repo.Commit(map[string]string{"main.tf": "# x\n", "scripts/a.sh": "echo a\n"})
	c := newCache(t)

	const n = 8
	var wg sync.WaitGroup
	dirs := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := c.Resolve(ctx, repo.URL, "main", gitsource.Credentials{})
			if err == nil && got != commit {
				err = fmt.Errorf("resolved %s, want %s", got, commit)
			}
			if err == nil {
				dirs[i], err = c.Tree(ctx, repo.URL, commit, gitsource.Credentials{})
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		if dirs[i] != dirs[0] {
			t.Fatalf("goroutine %d got tree %s, goroutine 0 got %s", i, dirs[i], dirs[0])
		}
	}
	if st := c.Stats(); st.Fetches != 1 {
		t.Fatalf("%d goroutines on a cold cache: got %d fetches, want 1", n, st.Fetches)
	}
	if b, err := os.ReadFile(filepath.Join(dirs[0], "scripts/a.sh")); err != nil || string(b) != "echo a\n" {
		t.Fatalf("scripts/a.sh = %q, %v", b, err)
	}
}
