package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Defaults for Config.
const (
	DefaultLockTimeout = 10 * time.Minute
	DefaultGracePeriod = 60 * time.Second
)

// Config is what a Runner needs. The zero value of every optional field means its default.
type Config struct {
	// Binary is the executable to run, from FindBinary. Required.
	Binary Binary
	// States keeps the workspaces' state and serves it to Terraform's http backend
	// (tfstate.Server). Required.
	States States
	// WorkRoot is the directory under which work dirs are created; os.TempDir().
	WorkRoot string
	// PluginCacheDir is the provider cache shared by every work dir on this host
	// (TF_PLUGIN_CACHE_DIR); empty means no cache. Init holds an exclusive flock on a file in it.
	PluginCacheDir string
	// Env is added to the environment of every run, e.g. variables a provider reads.
	Env map[string]string
	// BaseEnv is the worker's environment, filtered before Terraform sees it (see buildEnv);
	// os.Environ() when nil.
	BaseEnv []string
	// LockTimeout is how long a run waits for the state lock held by another run of the same
	// workspace (-lock-timeout); DefaultLockTimeout.
	LockTimeout time.Duration
	// GracePeriod is how long Terraform has, after its context is done and it got SIGINT, to
	// save state and exit before it is killed; DefaultGracePeriod. Keep it below the worker's
	// shutdown timeout, or the worker exits first and Terraform dies of Pdeathsig.
	GracePeriod time.Duration
}

// States keeps each workspace's state where Terraform's http backend reaches it.
type States interface {
	// Grant returns the TF_HTTP_* environment that points the http backend at workspace, with
	// credentials for it alone, and the function that revokes them and releases a lock left
	// by a Terraform that did not finish.
	Grant(workspace string) (env map[string]string, revoke func())
	// Read returns the workspace's state, or nil when it has none.
	Read(ctx context.Context, workspace string) ([]byte, error)
	// Delete removes the workspace's state once it tracks no resource.
	Delete(ctx context.Context, workspace string) error
}

// Runner prepares and runs Terraform work dirs. It is safe for concurrent use.
type Runner struct {
	cfg     Config
	baseEnv []string
	// program is the binary behind its version shim (versionShim), for the commands
	// terraform-exec checks the version of first (Workdir.versioned).
	program string
}

// New returns a Runner for cfg, after filling in defaults. It creates WorkRoot and
// PluginCacheDir when they do not exist, and returns an error when a required field is empty.
func New(cfg Config) (*Runner, error) {
	if cfg.Binary.Path == "" {
		return nil, errors.New("terraform config: no binary")
	}
	if cfg.States == nil {
		return nil, errors.New("terraform config: no state backend")
	}
	if cfg.WorkRoot == "" {
		cfg.WorkRoot = os.TempDir()
	}
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = DefaultLockTimeout
	}
	if cfg.GracePeriod <= 0 {
		cfg.GracePeriod = DefaultGracePeriod
	}
	for _, dir := range []string{cfg.WorkRoot, cfg.PluginCacheDir} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("terraform config: %w", err)
		}
	}
	var err error
	if cfg.WorkRoot, err = filepath.Abs(cfg.WorkRoot); err != nil {
		return nil, fmt.Errorf("terraform config: %w", err)
	}
	if cfg.PluginCacheDir != "" {
		if cfg.PluginCacheDir, err = filepath.Abs(cfg.PluginCacheDir); err != nil {
			return nil, fmt.Errorf("terraform config: %w", err)
		}
	}
	base := cfg.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	if cfg.PluginCacheDir != "" {
		pruneKept(cfg.WorkRoot, time.Now())
		pruneSeeds(cfg.WorkRoot, time.Now())
	}
	return &Runner{cfg: cfg, baseEnv: base, program: versionShim(cfg.WorkRoot, cfg.Binary)}, nil
}

// TrackedInstances counts the resource instances a state records (0 for no state).
func TrackedInstances(state []byte) (int, error) {
	var st struct {
		Resources []struct {
			Instances []json.RawMessage `json:"instances"`
		} `json:"resources"`
	}
	if len(state) == 0 {
		return 0, nil
	}
	if err := json.Unmarshal(state, &st); err != nil {
		return 0, fmt.Errorf("the state does not parse: %w", err)
	}
	n := 0
	for _, r := range st.Resources {
		n += len(r.Instances)
	}
	return n, nil
}

// Forget deletes workspace's state when it tracks no resource — an execution never built, or
// whose first apply failed before creating anything — and says whether it did. Removing such an
// execution needs no Terraform run, and must not have one: Terraform would still evaluate the
// module and want a value for every variable, and the inputs that come from a job that was never
// built have none.
func (r *Runner) Forget(ctx context.Context, workspace string) (bool, error) {
	state, err := r.cfg.States.Read(ctx, workspace)
	if err != nil {
		return false, fmt.Errorf("read workspace %s: %w", workspace, err)
	}
	if n, err := TrackedInstances(state); err != nil || n > 0 {
		return false, err
	}
	if err := r.cfg.States.Delete(ctx, workspace); err != nil {
		return false, fmt.Errorf("delete workspace %s: %w", workspace, err)
	}
	return true, nil
}
