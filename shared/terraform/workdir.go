package terraform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// workspaceRE is what Horizon accepts as a workspace name: Terraform refuses names that need
// URL escaping, and the name is also part of the work dir's name.
var workspaceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,89}$`)

// Stream tells where a line of output came from.
type Stream string

// Streams of a Sink.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
	// Horizon marks lines this package writes itself (retries, state recovery).
	Horizon Stream = "horizon"
)

// Sink receives Terraform's output one line at a time, without the line ending. Calls for one
// Workdir never overlap, although Terraform writes stdout and stderr concurrently, so a Sink
// needs no locking of its own for one Workdir. Lines are not masked: mask them in the Sink
// (secrets.Masker) before they leave the worker.
type Sink func(stream Stream, line string)

// PrepareOpts describes one job execution's work dir.
type PrepareOpts struct {
	// Source is the read-only checkout of the template repository at the pinned commit.
	Source string
	// Module is the module's directory inside Source ("" or "." for the root). The whole
	// checkout is copied so that relative module sources ("../modules/vm") keep working.
	Module string
	// Workspace names the execution's state, e.g. "s42-master-0". (Terraform itself stays on
	// its default workspace: the state backend gives each work dir its own address.)
	Workspace string
	// Vars are candidate variable values (parameters, inputs, horizon_* values). Only the ones
	// the module declares are written to VarsFile.
	Vars map[string]any
	// Env is added to the environment of this work dir's runs (after Config.Env).
	Env map[string]string
	// Sink receives the output of Init, Plan, Apply, Destroy and DeleteWorkspace; nil discards.
	Sink Sink
	// Commit is the commit Source was checked out at. With it, and a plugin cache, the work
	// dir is kept for the workspace's next step on this host, which then skips init (warm.go).
	Commit string
}

// Workdir is one job execution's copy of its module, bound to its workspace. Its methods must
// not be called concurrently: Terraform keeps per-directory state in .terraform. Close it when
// done.
type Workdir struct {
	r         *Runner
	root      string // created by Prepare; removed by Close unless kept
	dir       string // the module inside root, where Terraform runs
	workspace string
	// keep: root is the workspace's kept dir (warm.go), locked until Close (unlock); warm: it
	// was initialised for key already.
	keep, warm bool
	// seeded: the dir is a copy of this host's initialised module (seed.go); Init runs nothing.
	seeded bool
	key    string
	unlock func()

	// tf runs the binary itself, for the commands terraform-exec runs without asking the
	// version first (apply, destroy, plan, state push): no shim starts before them, under a
	// node's gate. versioned runs it behind the version shim, for the commands that ask (init,
	// show): made on first use, so a seeded or warm build never starts the shim. Both stream
	// to the sink, except inside quietly.
	tf, versionedTF *tfexec.Terraform
	env             map[string]string // of both handles; holds the state backend's credentials
	stdout, stderr  *lineWriter
	sink            Sink
	revoke          func() // the state backend's grant
}

// Prepare creates a work dir for one execution: a fresh directory under Config.WorkRoot with a
// copy of opts.Source, BackendFile and VarsFile added to the module. It returns an error when
// the workspace name is invalid, the module does not exist or does not parse, the module
// already has a file of either name, a declared variable without default has no candidate
// value, or opts.Env sets a variable Horizon manages. Nothing is left on disk after an error.
//
// VarsFile holds secret values in clear; the directory is private to the worker's user.
func (r *Runner) Prepare(ctx context.Context, opts PrepareOpts) (_ *Workdir, err error) {
	if !workspaceRE.MatchString(opts.Workspace) {
		return nil, fmt.Errorf("prepare: workspace name %q is not allowed", opts.Workspace)
	}
	stateEnv, revoke := r.cfg.States.Grant(opts.Workspace)
	defer func() {
		if err != nil {
			revoke()
		}
	}()
	env, err := buildEnv(r.baseEnv, r.cfg, r.cfg.Env, opts.Env, stateEnv)
	if err != nil {
		return nil, fmt.Errorf("prepare %s: %w", opts.Workspace, err)
	}
	module, err := cleanModule(opts.Source, opts.Module)
	if err != nil {
		return nil, fmt.Errorf("prepare %s: %w", opts.Workspace, err)
	}

	var root, key string
	keep, warm, unlock := false, false, func() {}
	if r.cfg.PluginCacheDir != "" && opts.Commit != "" {
		key = initKey(r.cfg.Binary, opts.Commit, module)
		var kept func()
		if root, warm, kept, keep, err = r.keptRoot(opts.Workspace, module, key); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", opts.Workspace, err)
		}
		if keep {
			unlock = kept
		}
	}
	if !keep {
		if root, err = os.MkdirTemp(r.cfg.WorkRoot, opts.Workspace+"-"); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", opts.Workspace, err)
		}
	}
	defer func() {
		if err != nil {
			if !warm {
				_ = os.RemoveAll(root) // nothing ran in it yet: there is no state to keep
			}
			unlock()
		}
	}()
	src := filepath.Join(root, "src")
	dir := filepath.Join(src, module)
	seed := ""
	if !warm {
		seed = r.seedFor(key)
	}
	switch {
	case warm:
	case seed != "": // initialised already, BackendFile included (seed.go): no init to run
		if err := copyTree(ctx, filepath.Join(seed, "src"), src, true); err != nil {
			return nil, fmt.Errorf("prepare %s: copy the initialised module: %w", opts.Workspace, err)
		}
	default:
		if err := copyTree(ctx, opts.Source, src, false); err != nil {
			return nil, fmt.Errorf("prepare %s: copy source: %w", opts.Workspace, err)
		}
		for _, name := range []string{BackendFile, VarsFile} {
			if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
				return nil, fmt.Errorf("prepare %s: the module has its own %s, which Horizon writes", opts.Workspace, name)
			}
		}
	}
	mod, err := inspectModule(dir)
	if err != nil {
		return nil, fmt.Errorf("prepare %s: %w", opts.Workspace, err)
	}
	vars, err := renderVars(mod, opts.Vars)
	if err != nil {
		return nil, fmt.Errorf("prepare %s: %w", opts.Workspace, err)
	}
	if err := os.WriteFile(filepath.Join(dir, BackendFile), []byte(backendConfig), 0o600); err != nil {
		return nil, fmt.Errorf("prepare %s: %w", opts.Workspace, err)
	}
	if err := os.WriteFile(filepath.Join(dir, VarsFile), vars, 0o600); err != nil {
		return nil, fmt.Errorf("prepare %s: %w", opts.Workspace, err)
	}

	w := &Workdir{r: r, root: root, dir: dir, workspace: opts.Workspace, sink: opts.Sink, revoke: revoke,
		keep: keep, warm: warm, seeded: seed != "", key: key, unlock: unlock, env: env}
	if w.sink == nil {
		w.sink = func(Stream, string) {}
	}
	var mu sync.Mutex
	w.stdout = &lineWriter{mu: &mu, sink: w.sink, stream: Stdout}
	w.stderr = &lineWriter{mu: &mu, sink: w.sink, stream: Stderr}
	if w.tf, err = r.handle(dir, env, r.cfg.Binary.Path); err != nil {
		return nil, fmt.Errorf("prepare %s: %w", opts.Workspace, err)
	}
	w.tf.SetStdout(w.stdout)
	w.tf.SetStderr(w.stderr)
	return w, nil
}

// versioned returns the handle for the commands terraform-exec checks the version of first.
func (w *Workdir) versioned(ctx context.Context) (*tfexec.Terraform, error) {
	if w.versionedTF == nil {
		tf, err := w.r.versionedHandle(ctx, w.dir, w.env)
		if err != nil {
			return nil, err
		}
		tf.SetStdout(w.stdout)
		tf.SetStderr(w.stderr)
		w.versionedTF = tf
	}
	return w.versionedTF, nil
}

// quietly runs op with no writer on tf, one of the work dir's handles, for the commands whose
// stdout is JSON with sensitive values in clear (show, state push): terraform-exec copies a
// command's stdout into the handle's writer as well as into its parser. Errors still carry
// stderr.
func (w *Workdir) quietly(tf *tfexec.Terraform, op func(tf *tfexec.Terraform) error) error {
	tf.SetStdout(nil)
	tf.SetStderr(nil)
	defer func() {
		tf.SetStdout(w.stdout)
		tf.SetStderr(w.stderr)
	}()
	return op(tf)
}

// handle returns a terraform-exec handle running program in dir with the whole environment
// set and the grace period as WaitDelay.
func (r *Runner) handle(dir string, env map[string]string, program string) (*tfexec.Terraform, error) {
	tf, err := tfexec.NewTerraform(dir, program)
	if err != nil {
		return nil, err
	}
	if err := tf.SetEnv(env); err != nil {
		return nil, err
	}
	tf.SetWaitDelay(r.cfg.GracePeriod)
	return tf, nil
}

// versionedHandle is handle running the binary behind its version shim, with the version
// cached (the shim answers it without starting Terraform). Writers are attached after:
// terraform-exec's version check prints its JSON to the handle's writer too.
func (r *Runner) versionedHandle(ctx context.Context, dir string, env map[string]string) (*tfexec.Terraform, error) {
	tf, err := r.handle(dir, env, r.program)
	if err != nil {
		return nil, err
	}
	if _, _, err := tf.Version(ctx, false); err != nil {
		return nil, fmt.Errorf("terraform version: %w", settled(ctx, err))
	}
	return tf, nil
}

// Dir returns the module directory inside the work dir, where Terraform runs.
func (w *Workdir) Dir() string { return w.dir }

// Workspace returns the workspace the work dir is bound to.
func (w *Workdir) Workspace() string { return w.workspace }

// Close revokes the work dir's state credentials (releasing a lock a killed Terraform left)
// and removes the work dir. When it holds an errored.tfstate that was not pushed, the
// directory and its credentials are kept, so that PushErroredState can still be called, and
// Close returns an *ErroredStateError: that file may be the only record of infrastructure
// that exists.
//
// A kept work dir (warm.go) stays for the workspace's next step, without its variables file
// (secrets in clear) and plan, and is unlocked.
func (w *Workdir) Close() error {
	if _, err := os.Stat(w.erroredPath()); err == nil {
		w.unlock() // the next step of the workspace leaves this dir alone (keptRoot)
		return &ErroredStateError{Path: w.erroredPath(), Err: errors.New("not pushed to the backend; work dir kept")}
	}
	w.revoke()
	defer w.unlock()
	if w.keep {
		for _, name := range []string{VarsFile, PlanFile} {
			if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				_ = os.RemoveAll(w.root) // a secret must not stay behind: give up the warm dir
				return fmt.Errorf("remove %s from the kept work dir: %w", name, err)
			}
		}
		return nil
	}
	if err := os.RemoveAll(w.root); err != nil {
		return fmt.Errorf("remove work dir: %w", err)
	}
	return nil
}

// copyTree copies the regular files, directories and symbolic links of src into dst (which
// must not exist), skipping .git, and any .terraform directory a checkout might contain unless
// withInit (a seed's, which init made). Copies are writable by the owner whatever the source's
// mode: the checkout is read-only.
func copyTree(ctx context.Context, src, dst string, withInit bool) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".terraform" && !withInit) && rel != "." {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(target, 0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return copyFile(path, target, info.Mode().Perm()|0o600)
		default:
			return nil // sockets, devices: nothing a module can use
		}
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close() // read-only: a close error loses nothing
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close() // the copy error is the one to report
		return err
	}
	return out.Close()
}
