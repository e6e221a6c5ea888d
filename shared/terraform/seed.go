package terraform

import (
	"context"
	"errors"
	"fmt"
	"horizon/shared/flock"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// A seed is this host's initialised copy of one commit's module: the checkout, BackendFile and
// the .terraform that terraform init made (backend settings without address or credentials,
// links into the plugin cache, the module tree), with its dependency lock file. Prepare copies
// it into a new work dir instead of running terraform init there, so that a build of a module
// this host has already initialised runs no init and takes no lock another build holds.
//
// Why it is correct: what init writes depends only on the module's files (the commit and
// module path), the binary and the backend block, which are the seed's key (initKey, the key
// of warm dirs too); the backend's address and credentials come from each run's environment
// and are not in .terraform (see doc.go, State); provider links point into the plugin cache,
// which only grows. A kept work dir already relies on the same facts between the steps of one
// workspace.
//
// Why it is safe and bounded:
//   - a seed holds no secret: no VarsFile, no state, no credentials;
//   - it is built in a temporary directory and renamed into place once init succeeded, so a
//     seed that exists is complete, and a reader needs no lock; builders of one key are
//     serialised by a flock on <seed>.lock, and init itself still takes the plugin cache's
//     lock;
//   - the caller seeds before it claims a node's build gate (Seed), so that waiting for
//     another build's init never happens while holding a node;
//   - New removes the seeds no step has used for keptFor (pruneSeeds).
//
// Seeds exist only with a plugin cache (without one, .terraform holds whole provider copies)
// and for a step that names its commit.

// seedsDir is the directory of the seeds under WorkRoot.
const seedsDir = ".seeds"

// seedWorkspace is the state the seed's init reads (Terraform's init reads its workspace's
// state through the backend): it never has one, and init does not write one.
const seedWorkspace = "horizon-seed"

// SeedOpts names a module at a commit, as PrepareOpts does.
type SeedOpts struct {
	Source string // the read-only checkout at Commit
	Module string
	Commit string
}

// Seed makes sure this host has an initialised copy of the module at the commit, running
// terraform init once if it has not, and waiting for another caller building the same seed.
// Call it before claiming a node's build gate: the Prepare that follows then runs no init. It
// does nothing without a plugin cache or a commit. An error (a module that does not init) is
// the caller's to ignore: Prepare then runs init itself and reports it in the step's log.
func (r *Runner) Seed(ctx context.Context, opts SeedOpts) error {
	if r.cfg.PluginCacheDir == "" || opts.Commit == "" {
		return nil
	}
	module, err := cleanModule(opts.Source, opts.Module)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	root := filepath.Join(r.cfg.WorkRoot, seedsDir)
	final := filepath.Join(root, initKey(r.cfg.Binary, opts.Commit, module))
	if r.seeded(final) {
		return nil
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	l, err := flock.Wait(ctx, final+".lock", initPoll, initPollMost)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	defer l.Release()
	if r.seeded(final) {
		return nil // built by another caller while this one waited
	}
	tmp, err := os.MkdirTemp(root, "tmp-")
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	defer os.RemoveAll(tmp) // empty after the rename; the half-made seed otherwise
	if err := r.initSeed(ctx, opts.Source, module, tmp); err != nil {
		return fmt.Errorf("seed %s at %s: %w", module, opts.Commit, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// initSeed copies the checkout into dir/src and runs terraform init in the module there, with
// the output discarded (Terraform's stderr is in the error).
func (r *Runner) initSeed(ctx context.Context, source, module, dir string) error {
	if err := copyTree(ctx, source, filepath.Join(dir, "src"), false); err != nil {
		return fmt.Errorf("copy source: %w", err)
	}
	mod := filepath.Join(dir, "src", module)
	for _, name := range []string{BackendFile, VarsFile} {
		if _, err := os.Lstat(filepath.Join(mod, name)); err == nil {
			return fmt.Errorf("the module has its own %s, which Horizon writes", name)
		}
	}
	if err := os.WriteFile(filepath.Join(mod, BackendFile), []byte(backendConfig), 0o600); err != nil {
		return err
	}
	stateEnv, revoke := r.cfg.States.Grant(seedWorkspace)
	defer revoke()
	env, err := buildEnv(r.baseEnv, r.cfg, r.cfg.Env, nil, stateEnv)
	if err != nil {
		return err
	}
	tf, err := r.versionedHandle(ctx, mod, env)
	if err != nil {
		return err
	}
	return failed(ctx, "terraform init", r.initLocked(ctx, tf.Init))
}

// seeded says whether the seed exists, and marks it used (for pruneSeeds).
func (r *Runner) seeded(seed string) bool {
	if _, err := os.Stat(seed); err != nil {
		return false
	}
	now := time.Now()
	_ = os.Chtimes(seed, now, now)
	return true
}

// seedFor returns the seed of key, or "" when this host has none.
func (r *Runner) seedFor(key string) string {
	if r.cfg.PluginCacheDir == "" || key == "" {
		return ""
	}
	seed := filepath.Join(r.cfg.WorkRoot, seedsDir, key)
	if !r.seeded(seed) {
		return ""
	}
	return seed
}

// pruneSeeds removes the seeds of root (a WorkRoot) unused for keptFor, and what a builder
// killed mid-build left (tmp-*, older than keptFor too: a build in progress is recent).
func pruneSeeds(root string, now time.Time) {
	entries, err := os.ReadDir(filepath.Join(root, seedsDir))
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < keptFor {
			continue
		}
		path := filepath.Join(root, seedsDir, e.Name())
		if !e.IsDir() { // a builders' lock file: removed when no builder holds it
			if l, ok, err := flock.Try(path); err == nil && ok {
				_ = os.Remove(path)
				l.Release()
			}
			continue
		}
		// A copy in progress reads a seed whose time seedFor has just refreshed: an old one is
		// being read by nobody.
		_ = os.RemoveAll(path)
	}
}

// cleanModule checks that module is a directory inside source and returns it cleaned.
func cleanModule(source, module string) (string, error) {
	m := filepath.Clean(module)
	if filepath.IsAbs(m) || m == ".." || len(m) > 2 && m[:3] == "../" {
		return "", fmt.Errorf("module path %q is outside the source", module)
	}
	if fi, err := os.Stat(filepath.Join(source, m)); err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("module %q not found in %s", module, source)
		}
		return "", err
	}
	return m, nil
}
