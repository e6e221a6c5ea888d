package gitsource

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Resolve returns the commit branch of repoURL points to now. It always asks the server (one
// cheap ref listing, like git ls-remote) so that new commits are seen, and fetches into the
// bare clone only when that commit is not there yet; a fetch is shared with any goroutine or
// process resolving the same repository at the same time.
//
// Errors wrap ErrInvalidURL, ErrRepoNotFound, ErrUnreachable, ErrAuth, ErrHostKey or
// ErrBranchNotFound when the repository, the network or the user is at fault.
func (c *Cache) Resolve(ctx context.Context, repoURL, branch string, creds Credentials) (string, error) {
	r := c.ResolveBranches(ctx, repoURL, []string{branch}, creds)[branch]
	return r.Commit, r.Err
}

// Resolved is what a branch resolved to: its commit, or the error Resolve would return.
type Resolved struct {
	Commit string
	Err    error
}

// ResolveBranches is Resolve for several branches of one repository at the cost of one: one
// ref listing for them all, and at most one fetch for the commits the cache lacks. It returns
// every branch asked for, each with its commit or its error.
func (c *Cache) ResolveBranches(ctx context.Context, repoURL string, branches []string, creds Credentials) map[string]Resolved {
	out := make(map[string]Resolved, len(branches))
	var refs []string
	for _, b := range branches {
		if _, seen := out[b]; seen {
			continue
		}
		if err := CheckBranch(b); err != nil {
			out[b] = Resolved{Err: fmt.Errorf("%w: %v", ErrBranchNotFound, err)}
			continue
		}
		out[b] = Resolved{}
		refs = append(refs, "refs/heads/"+b)
	}
	fail := func(err error) map[string]Resolved {
		for _, ref := range refs {
			out[strings.TrimPrefix(ref, "refs/heads/")] = Resolved{Err: err}
		}
		return out
	}
	if err := CheckURL(repoURL); err != nil {
		for b := range out {
			out[b] = Resolved{Err: err}
		}
		return out
	}
	if len(refs) == 0 {
		return out
	}
	rem, err := c.remote(repoURL, creds)
	if err != nil {
		return fail(err)
	}
	defer rem.cleanup()

	c.listings.Add(1)
	listing, err := c.git(ctx, rem.env, rem.redact, append([]string{"ls-remote", "--", repoURL}, refs...)...)
	if err != nil {
		return fail(fmt.Errorf("list branches of %s: %w", repoURL, classify(err)))
	}
	key := repoKey(repoURL)
	missing := map[string]string{} // ref → listed commit, for the commits the cache lacks
	for _, ref := range refs {
		branch := strings.TrimPrefix(ref, "refs/heads/")
		switch commit := findRef(listing, ref); {
		case commit == "":
			out[branch] = Resolved{Err: fmt.Errorf("%w: %s has no branch %q", ErrBranchNotFound, repoURL, branch)}
		case c.has(ctx, key, commit):
			out[branch] = Resolved{Commit: commit}
		default:
			missing[ref] = commit
		}
	}
	if len(missing) == 0 {
		return out
	}
	if err := c.fetchBranches(ctx, key, repoURL, rem, missing, out); err != nil {
		for ref := range missing {
			if b := strings.TrimPrefix(ref, "refs/heads/"); out[b].Commit == "" {
				out[b] = Resolved{Err: err}
			}
		}
	}
	return out
}

// fetchBranches fetches the branches of missing (ref → the commit listed) whose commit the
// bare clone still lacks once the repository is locked, all in one fetch, and records the
// commit each points to in out.
func (c *Cache) fetchBranches(ctx context.Context, key, repoURL string, rem *remote, missing map[string]string, out map[string]Resolved) error {
	release, err := c.lock(ctx, key)
	if err != nil {
		return err
	}
	defer release()
	if err := c.ensureBare(ctx, key); err != nil {
		return err
	}
	var refs, specs []string
	for ref, commit := range missing {
		if c.has(ctx, key, commit) { // fetched by another goroutine or process while we waited
			out[strings.TrimPrefix(ref, "refs/heads/")] = Resolved{Commit: commit}
			continue
		}
		refs, specs = append(refs, ref), append(specs, "+"+ref+":"+ref)
	}
	if len(refs) == 0 {
		return nil
	}
	if err := c.fetch(ctx, key, repoURL, rem, specs...); err != nil {
		return err
	}
	for _, ref := range refs {
		branch := strings.TrimPrefix(ref, "refs/heads/")
		// The branch may have moved since the listing; what was fetched is at least as new.
		commit, err := c.git(ctx, c.baseEnv(), noRedact, "--git-dir="+c.bareDir(key), "rev-parse", "--verify", "--end-of-options", ref+"^{commit}")
		if err != nil {
			out[branch] = Resolved{Err: fmt.Errorf("read fetched branch %q of %s: %w", branch, repoURL, err)}
			continue
		}
		out[branch] = Resolved{Commit: strings.TrimSpace(string(commit))}
	}
	return nil
}

// findRef returns the object id of ref in ls-remote output, or "". ls-remote matches patterns
// by their tail, so the name must be compared whole.
func findRef(out []byte, ref string) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		id, name, ok := strings.Cut(sc.Text(), "\t")
		if ok && name == ref && commitRE.MatchString(id) {
			return id
		}
	}
	return ""
}

// has reports whether the bare clone holds commit. It reads only local files. A commit whose
// tree is materialised was in the clone (Tree checks it out from there) and needs nothing
// more: that answer costs a stat, not a git process, which is most of a warm Resolve's cost.
func (c *Cache) has(ctx context.Context, key, commit string) bool {
	if _, err := os.Stat(filepath.Join(c.treesDir(key), commit)); err == nil {
		return true
	}
	if _, err := os.Stat(c.bareDir(key)); err != nil {
		return false
	}
	_, err := c.git(ctx, c.baseEnv(), noRedact, "--git-dir="+c.bareDir(key), "cat-file", "-e", commit+"^{commit}")
	return err == nil
}

// fetch runs one fetch of refspecs into the bare clone. The caller holds the repository's lock.
func (c *Cache) fetch(ctx context.Context, key, repoURL string, rem *remote, refspecs ...string) error {
	c.removeStaleLocks(key)
	c.fetches.Add(1)
	args := append([]string{"--git-dir=" + c.bareDir(key),
		"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--", repoURL}, refspecs...)
	_, err := c.git(ctx, rem.env, rem.redact, args...)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", repoURL, classify(err))
	}
	return nil
}

// ensureBare creates the repository's bare clone if it does not exist, atomically: it is
// initialised under a temporary name and renamed. The caller holds the repository's lock.
func (c *Cache) ensureBare(ctx context.Context, key string) error {
	dir := c.bareDir(key)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-"+key+"-")
	if err != nil {
		return fmt.Errorf("create bare clone: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	// An empty template: no sample hooks. No automatic gc: a pinned commit that a force-push
	// made unreachable must stay, since stacks still build from it. Fetched objects always stay
	// in a pack (unpackLimit 1), which appears at once with its index: a reader that does not
	// hold the lock never sees a commit whose trees are still being written.
	if _, err := c.git(ctx, c.baseEnv(), noRedact, "init", "--quiet", "--bare", "--template=", tmp); err != nil {
		return fmt.Errorf("init bare clone: %w", err)
	}
	if err := appendFile(filepath.Join(tmp, "config"), bareConfig); err != nil {
		return fmt.Errorf("configure bare clone: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("create bare clone: %w", err)
	}
	return nil
}

// bareConfig is appended to a new bare clone's config (see ensureBare).
const bareConfig = `[gc]
	auto = 0
[maintenance]
	auto = false
[core]
	logAllRefUpdates = false
[fetch]
	unpackLimit = 1
`

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close() // the write error is the one to report
		return err
	}
	return f.Close()
}

// removeStaleLocks deletes git's own *.lock files in the bare clone. Every writer of the clone
// holds our lock, which the caller now holds, so any such file was left by a process that died
// mid-fetch and would make every later fetch fail.
func (c *Cache) removeStaleLocks(key string) {
	root := c.bareDir(key)
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts are git's to report
		}
		if d.IsDir() && path == filepath.Join(root, "objects") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".lock") {
			_ = os.Remove(path) // best effort; a failure shows up as git's own error
		}
		return nil
	})
}

func noRedact(s string) string { return s }
