package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Cached returns the directory Tree would return for repoURL at commit when it is already in
// the cache, without a lock, the network or credentials: a caller whose credentials cost a
// database read asks here first. ok is false for anything else, an invalid argument included.
func (c *Cache) Cached(repoURL, commit string) (dir string, ok bool) {
	if CheckURL(repoURL) != nil || checkCommit(commit) != nil {
		return "", false
	}
	return c.cached(repoKey(repoURL), commit)
}

// cached is Cached for arguments already checked, by the repository's cache key.
func (c *Cache) cached(key, commit string) (string, bool) {
	final := filepath.Join(c.treesDir(key), commit)
	if _, err := os.Stat(final); err != nil {
		return "", false
	}
	return final, true
}

// Tree returns the directory holding repoURL's files at commit (a full object id): read-only,
// shared by every caller, and complete — it appears only once fully written, so a crash
// half-way never leaves a partial tree visible. A tree already in the cache is returned without
// taking a lock or touching the network; a commit already in the bare clone needs no fetch.
// Submodules are not fetched.
//
// The tree may hold symbolic links, but none that leaves it (ErrUnsafeTree); read it through
// os.Root all the same. Do not modify it.
//
// Errors wrap ErrInvalidURL, ErrCommitNotFound, ErrRepoNotFound, ErrUnreachable, ErrAuth,
// ErrHostKey or ErrUnsafeTree when the repository, the network or the user is at fault.
func (c *Cache) Tree(ctx context.Context, repoURL, commit string, creds Credentials) (string, error) {
	if err := CheckURL(repoURL); err != nil {
		return "", err
	}
	if err := checkCommit(commit); err != nil {
		return "", err
	}
	key := repoKey(repoURL)
	if dir, ok := c.cached(key, commit); ok {
		return dir, nil
	}
	final := filepath.Join(c.treesDir(key), commit)
	release, err := c.lock(ctx, key)
	if err != nil {
		return "", err
	}
	defer release()
	if _, err := os.Stat(final); err == nil {
		return final, nil // built by another goroutine or process while we waited
	}
	if err := c.ensureBare(ctx, key); err != nil {
		return "", err
	}
	if !c.has(ctx, key, commit) {
		rem, err := c.remote(repoURL, creds)
		if err != nil {
			return "", err
		}
		defer rem.cleanup()
		// Servers let a client fetch a commit by id when a branch reaches it; the ref keeps it
		// in the clone.
		if err := c.fetch(ctx, key, repoURL, rem, commit+":refs/pinned/"+commit); err != nil {
			if explained(err) {
				return "", err
			}
			// A server refuses an id it does not have in words of its own.
			return "", fmt.Errorf("%w: %s has no commit %s: %w", ErrCommitNotFound, repoURL, commit, err)
		}
		if !c.has(ctx, key, commit) {
			return "", fmt.Errorf("%w: %s has no commit %s", ErrCommitNotFound, repoURL, commit)
		}
	}
	if err := c.materialise(ctx, key, commit, final); err != nil {
		return "", fmt.Errorf("check out %s at %s: %w", repoURL, commit, err)
	}
	return final, nil
}

// materialise checks commit out into a temporary directory beside final, makes it read-only
// and durable, and renames it to final. The caller holds the repository's lock, so any other
// temporary directory of this commit was left by a process that died, and is removed.
func (c *Cache) materialise(ctx context.Context, key, commit, final string) error {
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	stale, _ := filepath.Glob(filepath.Join(parent, ".tmp-"+commit+"-*"))
	for _, s := range stale {
		if err := removeTree(s); err != nil {
			return fmt.Errorf("remove a crashed checkout: %w", err)
		}
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-"+commit+"-")
	if err != nil {
		return err
	}
	index := tmp + ".index"
	done := false
	defer func() {
		_ = os.Remove(index) // the index only served the checkout
		if !done {
			_ = removeTree(tmp) // best effort: the next attempt removes it under the lock
		}
	}()
	// A private index file: the bare clone's own index is never touched, and nothing but the
	// commit's files lands in the tree (no .git).
	env := append(c.baseEnv(), "GIT_INDEX_FILE="+index)
	if _, err := c.git(ctx, env, noRedact, "--git-dir="+c.bareDir(key), "--work-tree="+tmp, "read-tree", "--reset", "-u", commit+"^{tree}"); err != nil {
		return err
	}
	if err := checkLinks(tmp); err != nil {
		return err
	}
	if err := freeze(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	done = true
	// The top directory is frozen last: renaming a directory needs no write permission on it,
	// but freezing it before would be one more thing to get wrong on other systems.
	if err := os.Chmod(final, 0o555); err != nil {
		return err
	}
	return syncDir(parent)
}

// checkLinks refuses a tree with a symbolic link that resolves outside it, or does not resolve.
func checkLinks(root string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("%w: %s does not resolve", ErrUnsafeTree, rel)
		}
		if inside, _ := filepath.Rel(realRoot, target); inside == ".." || strings.HasPrefix(inside, "../") || filepath.IsAbs(inside) {
			return fmt.Errorf("%w: %s points to %s", ErrUnsafeTree, rel, target)
		}
		return nil
	})
}

// freeze makes every file and directory below root (not root itself) read-only, and flushes
// files to disk so that a tree that survives a crash by its name also has its content.
func freeze(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.Type()&fs.ModeSymlink != 0:
			return nil // a link has no mode of its own on Linux
		case d.IsDir():
			if path != root {
				dirs = append(dirs, path)
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o444)
		if info.Mode()&0o100 != 0 {
			mode = 0o555
		}
		if err := syncFile(path); err != nil {
			return err
		}
		return os.Chmod(path, mode)
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- { // deepest first
		if err := syncDir(dirs[i]); err != nil {
			return err
		}
		if err := os.Chmod(dirs[i], 0o555); err != nil {
			return err
		}
	}
	return syncDir(root)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close() // read-only: Sync reported what matters
	return f.Sync()
}

func syncDir(path string) error { return syncFile(path) }

// removeTree removes a (possibly read-only) tree.
func removeTree(root string) error {
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o755) // so that RemoveAll can empty it; errors surface there
		}
		return nil
	})
	return os.RemoveAll(root)
}

// explained reports whether err already says why a remote operation failed.
func explained(err error) bool {
	for _, e := range []error{ErrCommitNotFound, ErrRepoNotFound, ErrAuth, ErrHostKey, ErrUnreachable, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
