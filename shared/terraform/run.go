package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"
	"horizon/shared/flock"
	"time"
)

// PlanFile is the name of the plan Plan saves in the module directory.
const PlanFile = "horizon.tfplan"

// Output is one root module output.
type Output struct {
	// Value is the output's value as JSON, in clear even when Sensitive.
	Value json.RawMessage
	// Sensitive is set for outputs declared sensitive = true: Horizon stores them as secrets.
	Sensitive bool
}

// Init runs terraform init. When Config.PluginCacheDir is set, init holds the cache's flock:
// Terraform's plugin cache is not safe for concurrent init (terraform#31964). There is no
// workspace to select or create: the state backend's address is the work dir's own.
//
// In a warm work dir (initialised for the same commit, module, backend and binary: warm.go),
// or one copied from this host's seed of the module (seed.go), it runs nothing. After an init that succeeded, a kept work dir records what it is warm for.
func (w *Workdir) Init(ctx context.Context) error {
	if w.warm {
		w.note("terraform init skipped: this work dir was initialised for the same commit and module")
		return nil
	}
	var err error
	if w.seeded {
		w.note("terraform init skipped: this work dir is a copy of this host's initialised module of the same commit")
	} else {
		var tf *tfexec.Terraform
		if tf, err = w.versioned(ctx); err == nil {
			err = w.r.initLocked(ctx, tf.Init)
			w.flush()
		}
	}
	if err == nil && w.keep {
		if err := os.WriteFile(filepath.Join(w.root, initKeyFile), []byte(w.key), 0o600); err != nil {
			return fmt.Errorf("record the work dir's init: %w", err)
		}
		w.warm = true
	}
	return failed(ctx, "terraform init", err)
}

// Apply runs terraform apply -auto-approve. It waits up to Config.LockTimeout for a lock held
// by another run of the workspace. When ctx is done Terraform gets SIGINT, saves what it has
// done (an interrupted resource is saved tainted) and releases the lock; if it has not exited
// Config.GracePeriod later it is killed. The error then satisfies errors.Is(err,
// context.Canceled) (or DeadlineExceeded). If Terraform could not save state it left
// errored.tfstate: Apply pushes it, and returns an *ErroredStateError when that fails too.
func (w *Workdir) Apply(ctx context.Context) error {
	err := w.tf.Apply(ctx, tfexec.LockTimeout(w.r.cfg.LockTimeout.String()))
	w.flush()
	return w.afterRun(ctx, "terraform apply", err)
}

// Destroy runs terraform destroy -auto-approve, with Apply's locking, cancellation and
// errored.tfstate handling. The workspace is empty afterwards; DeleteWorkspace removes it.
func (w *Workdir) Destroy(ctx context.Context) error {
	err := w.tf.Destroy(ctx, tfexec.LockTimeout(w.r.cfg.LockTimeout.String()))
	w.flush()
	return w.afterRun(ctx, "terraform destroy", err)
}

// afterRun wraps a run's error and deals with an errored.tfstate the run left behind. The push
// runs even when ctx is done, bounded by the grace period: state that is not pushed is lost.
func (w *Workdir) afterRun(ctx context.Context, op string, runErr error) error {
	pushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.r.cfg.GracePeriod)
	defer cancel()
	pushErr := w.PushErroredState(pushCtx)
	w.flush()
	runErr = failed(ctx, op, runErr)
	var ese *ErroredStateError
	if errors.As(pushErr, &ese) {
		return &ErroredStateError{Path: ese.Path, Err: errors.Join(runErr, ese.Err)}
	}
	return errors.Join(runErr, pushErr)
}

// Plan runs terraform plan, saving the plan as PlanFile for ShowPlan, and reports whether it
// changes anything. Locking and cancellation are as for Apply.
func (w *Workdir) Plan(ctx context.Context) (changed bool, err error) {
	changed, err = w.tf.Plan(ctx,
		tfexec.Out(filepath.Join(w.dir, PlanFile)),
		tfexec.LockTimeout(w.r.cfg.LockTimeout.String()))
	w.flush()
	if err != nil {
		return false, failed(ctx, "terraform plan", err)
	}
	return changed, nil
}

// ShowPlan returns the plan saved by Plan. Its prior state and output changes hold sensitive
// values in clear: redact before storing or showing it. It runs quietly.
func (w *Workdir) ShowPlan(ctx context.Context) (*tfjson.Plan, error) {
	var plan *tfjson.Plan
	tf, err := w.versioned(ctx)
	if err == nil {
		err = w.quietly(tf, func(tf *tfexec.Terraform) (err error) {
			plan, err = tf.ShowPlanFile(ctx, filepath.Join(w.dir, PlanFile))
			return settled(ctx, err)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("terraform show plan: %w", err)
	}
	return plan, nil
}

// initLocked runs init, holding the plugin cache's flock when there is a cache: Terraform's
// plugin cache is not safe for concurrent init (terraform#31964). The flock orders every init
// of the host, whatever worker process runs it.
func (r *Runner) initLocked(ctx context.Context, init func(context.Context, ...tfexec.InitOption) error) error {
	if r.cfg.PluginCacheDir == "" {
		return init(ctx)
	}
	l, err := flock.Wait(ctx, filepath.Join(r.cfg.PluginCacheDir, ".horizon-init.lock"), initPoll, initPollMost)
	if err != nil {
		return err
	}
	defer l.Release()
	return init(ctx)
}

// An init waiting for another polls the lock from initPoll apart, doubling up to initPollMost:
// an init takes seconds, so the latency is noise.
const (
	initPoll     = 10 * time.Millisecond
	initPollMost = 250 * time.Millisecond
)

// Outputs returns the root module's outputs from the workspace's saved state, read from the
// state backend without running Terraform (the same values `terraform output -json` prints).
func (w *Workdir) Outputs(ctx context.Context) (map[string]Output, error) {
	state, err := w.r.cfg.States.Read(ctx, w.workspace)
	if err != nil {
		return nil, fmt.Errorf("read the outputs of %s: %w", w.workspace, err)
	}
	var st struct {
		Outputs map[string]struct {
			Value     json.RawMessage `json:"value"`
			Sensitive bool            `json:"sensitive"`
		} `json:"outputs"`
	}
	if state != nil {
		if err := json.Unmarshal(state, &st); err != nil {
			return nil, fmt.Errorf("read the outputs of %s: %w", w.workspace, err)
		}
	}
	out := make(map[string]Output, len(st.Outputs))
	for name, o := range st.Outputs {
		out[name] = Output{Value: o.Value, Sensitive: o.Sensitive}
	}
	return out, nil
}

// DeleteWorkspace removes the work dir's state from the backend once it is empty (after
// Destroy); like Terraform, the backend refuses while the state still tracks resources.
//
// The work dir is then removed by Close even when it was kept: the workspace has no next step.
func (w *Workdir) DeleteWorkspace(ctx context.Context) error {
	if err := w.r.cfg.States.Delete(ctx, w.workspace); err != nil {
		return fmt.Errorf("delete workspace %s: %w", w.workspace, err)
	}
	if w.keep {
		w.keep = false
		_ = os.Remove(w.root + ".lock") // held by this work dir; the workspace is gone
	}
	return nil
}

func (w *Workdir) flush() {
	w.stdout.flush()
	w.stderr.flush()
}
