package terraform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"horizon/shared/flock"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A work dir is kept between the steps of its workspace (warm) when the runner has a plugin
// cache and the step names the commit of its source: the next step of the workspace on this
// host finds it initialised for the same commit, module, backend and binary and skips
// terraform init. Without a plugin cache .terraform holds full copies of the providers
// (hundreds of MB per work dir), so work dirs stay temporary.
//
// Safety:
//   - the key (initKey) is written only after an init succeeded, so a dir whose init was
//     interrupted, or whose worker was killed before or during init, is rebuilt;
//   - a dir of another key (another commit, module, binary) is removed and built afresh;
//   - one step at a time uses a warm dir: Prepare takes an exclusive flock on it for the work
//     dir's life (released by Close, or by the kernel when the worker dies); a Prepare that
//     finds it held (an attempt still running elsewhere on the host) uses a temporary dir;
//   - Close removes the variables file (it holds secrets in clear) and the plan; what stays
//     is the module's copy and .terraform (backend settings without credentials, links into
//     the plugin cache). The state is never in the work dir: it is in the backend.
//   - after a destroy, DeleteWorkspace makes Close remove the dir. A workspace destroyed on
//     another host, or abandoned by a force-remove, never comes back to this one: New removes
//     kept dirs no step has used for keptFor (pruneKept).

// initKeyFile holds a warm dir's key.
const initKeyFile = ".horizon-init"

// keptFor is how long a kept dir may go unused before New removes it.
const keptFor = 14 * 24 * time.Hour

// pruneKept removes the kept dirs of root whose last use (their lock file's time, which
// keptRoot refreshes) is older than keptFor, unless a step holds them or they hold an
// unpushed errored.tfstate. It runs once per Runner: the dirs are few and the cost is one
// directory read.
func pruneKept(root string, now time.Time) {
	locks, _ := filepath.Glob(filepath.Join(root, "*.lock")) // a bad pattern is impossible here
	for _, lock := range locks {
		info, err := os.Stat(lock)
		if err != nil || now.Sub(info.ModTime()) < keptFor {
			continue
		}
		l, ok, err := flock.Try(lock)
		if err != nil || !ok {
			continue
		}
		dir := strings.TrimSuffix(lock, ".lock")
		if !holdsErroredState(dir) && os.RemoveAll(dir) == nil {
			_ = os.Remove(lock)
		}
		l.Release()
	}
}

// holdsErroredState says whether a work dir holds an errored.tfstate anywhere in its module
// copy: the only record of what a Terraform that could not save its state made.
func holdsErroredState(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil: // what cannot be read is not removed
			found = true
			return fs.SkipAll
		case found:
			return fs.SkipAll
		case d.IsDir() && d.Name() == ".terraform":
			return fs.SkipDir
		case d.Name() == erroredStateFile:
			found = true
		}
		return nil
	})
	return found
}

// initKey is what a warm dir must have been initialised for.
func initKey(b Binary, commit, module string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s", b.Path, b.Kind, b.Version, commit, module, backendConfig)
	return hex.EncodeToString(h.Sum(nil))
}

// keptRoot returns the kept work dir of workspace, locked, when the runner keeps work dirs and
// no other step holds it, and whether it is initialised for key. A dir holding an
// errored.tfstate (a Terraform that could not save its state, and a worker that could not push
// it) is left alone for the operator: ok is then false too, and the step uses a temporary dir.
func (r *Runner) keptRoot(workspace, module, key string) (root string, warm bool, unlock func(), ok bool, err error) {
	root = filepath.Join(r.cfg.WorkRoot, workspace)
	l, ok, err := flock.Try(root + ".lock")
	if err != nil || !ok {
		return "", false, nil, false, err
	}
	unlock = l.Release
	now := time.Now()
	_ = os.Chtimes(root+".lock", now, now) // its last use, for pruneKept
	if _, err := os.Stat(filepath.Join(root, "src", module, erroredStateFile)); err == nil {
		unlock()
		return "", false, nil, false, nil
	}
	got, _ := os.ReadFile(filepath.Join(root, initKeyFile)) // absent: not initialised
	if string(got) == key {
		return root, true, unlock, true, nil
	}
	if err := os.RemoveAll(root); err != nil {
		unlock()
		return "", false, nil, false, fmt.Errorf("remove the work dir of another commit: %w", err)
	}
	if err := os.Mkdir(root, 0o700); err != nil {
		unlock()
		return "", false, nil, false, err
	}
	return root, false, unlock, true, nil
}
