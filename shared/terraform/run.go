package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"
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

// isContention reports whether err is one a backend returns when another run is creating a
// workspace or the state tables at the same moment. The pg backend creates a workspace under one
// advisory lock for the whole database, taken without waiting (terraform#33217), and the
// first runs on a database race each other's CREATE … IF NOT EXISTS in Postgres's catalogue
// ("pq: type \"states\" already exists", "pq: duplicate key value violates unique
// constraint"). Both go away on a retry.
func isContention(err error) bool {
	msg := strings.ToLower(err.Error())
	if strings.Contains(msg, "already locked for workspace creation") {
		return true
	}
	return strings.Contains(msg, "pq: ") &&
		(strings.Contains(msg, "already exists") || strings.Contains(msg, "duplicate key value violates unique constraint"))
}

const contentionAttempts = 8

// retry runs op until it succeeds, fails for another reason than contention, ctx is done, or
// contentionAttempts are used, waiting with jittered exponential backoff between attempts.
func (w *Workdir) retry(ctx context.Context, what string, op func() error) error {
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil || ctx.Err() != nil || attempt == contentionAttempts || !isContention(err) {
			return err
		}
		w.note(fmt.Sprintf("%s: state backend busy creating a workspace or its tables, retrying (attempt %d of %d)", what, attempt+1, contentionAttempts))
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err()) // so that errors.Is(err, context.Canceled) holds
		case <-t.C:
		}
		delay = min(2*delay, 3*time.Second)
	}
}

// Init runs terraform init and selects the work dir's workspace, creating it when it does not
// exist. When Config.PluginCacheDir is set, init holds the cache's flock: Terraform's plugin
// cache is not safe for concurrent init (terraform#31964). Contention on the backend's
// workspace-creation lock is retried.
func (w *Workdir) Init(ctx context.Context) error {
	err := w.retry(ctx, "init", func() error {
		if w.r.cfg.PluginCacheDir == "" {
			return w.logged.Init(ctx)
		}
		unlock, err := lockFile(ctx, filepath.Join(w.r.cfg.PluginCacheDir, ".horizon-init.lock"))
		if err != nil {
			return err
		}
		defer unlock()
		return w.logged.Init(ctx)
	})
	w.flush()
	if err != nil {
		return failed("terraform init", err)
	}
	if err := w.selectWorkspace(ctx); err != nil {
		return fmt.Errorf("select workspace %s: %w", w.workspace, err)
	}
	return nil
}

// selectWorkspace selects the workspace, or creates it (which also selects it). Listing first
// avoids parsing the wording of "does not exist" errors, which differs between versions; a
// concurrent creation of the same workspace is caught by listing again.
func (w *Workdir) selectWorkspace(ctx context.Context) error {
	defer w.flush()
	for range 2 {
		list, current, err := w.quiet.WorkspaceList(ctx)
		if err != nil {
			return err
		}
		if slices.Contains(list, w.workspace) {
			if current == w.workspace {
				return nil
			}
			return w.logged.WorkspaceSelect(ctx, w.workspace)
		}
		err = w.retry(ctx, "workspace new", func() error {
			return w.logged.WorkspaceNew(ctx, w.workspace, tfexec.LockTimeout(w.r.cfg.LockTimeout.String()))
		})
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !strings.Contains(err.Error(), "already exists") {
			return err
		}
	}
	return fmt.Errorf("workspace %s neither exists nor can be created", w.workspace)
}

// Apply runs terraform apply -auto-approve. It waits up to Config.LockTimeout for a lock held
// by another run of the workspace. When ctx is done Terraform gets SIGINT, saves what it has
// done (an interrupted resource is saved tainted) and releases the lock; if it has not exited
// Config.GracePeriod later it is killed. The error then satisfies errors.Is(err,
// context.Canceled) (or DeadlineExceeded). If Terraform could not save state it left
// errored.tfstate: Apply pushes it, and returns an *ErroredStateError when that fails too.
func (w *Workdir) Apply(ctx context.Context) error {
	err := w.logged.Apply(ctx, tfexec.LockTimeout(w.r.cfg.LockTimeout.String()))
	w.flush()
	return w.afterRun(ctx, "terraform apply", err)
}

// Destroy runs terraform destroy -auto-approve, with Apply's locking, cancellation and
// errored.tfstate handling. The workspace is empty afterwards; DeleteWorkspace removes it.
func (w *Workdir) Destroy(ctx context.Context) error {
	err := w.logged.Destroy(ctx, tfexec.LockTimeout(w.r.cfg.LockTimeout.String()))
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
	runErr = failed(op, runErr)
	var ese *ErroredStateError
	if errors.As(pushErr, &ese) {
		return &ErroredStateError{Path: ese.Path, Err: errors.Join(runErr, ese.Err)}
	}
	return errors.Join(runErr, pushErr)
}

// Plan runs terraform plan, saving the plan as PlanFile for ShowPlan, and reports whether it
// changes anything. Locking and cancellation are as for Apply.
func (w *Workdir) Plan(ctx context.Context) (changed bool, err error) {
	changed, err = w.logged.Plan(ctx,
		tfexec.Out(filepath.Join(w.dir, PlanFile)),
		tfexec.LockTimeout(w.r.cfg.LockTimeout.String()))
	w.flush()
	if err != nil {
		return false, failed("terraform plan", err)
	}
	return changed, nil
}

// ShowPlan returns the plan saved by Plan. Its prior state and output changes hold sensitive
// values in clear: redact before storing or showing it. It runs without any log writer.
func (w *Workdir) ShowPlan(ctx context.Context) (*tfjson.Plan, error) {
	plan, err := w.quiet.ShowPlanFile(ctx, filepath.Join(w.dir, PlanFile))
	if err != nil {
		return nil, fmt.Errorf("terraform show plan: %w", err)
	}
	return plan, nil
}

// Outputs returns the root module's outputs from the workspace's state. It runs without any
// log writer: terraform-exec would otherwise copy the JSON, sensitive values included, into
// the sink.
func (w *Workdir) Outputs(ctx context.Context) (map[string]Output, error) {
	metas, err := w.quiet.Output(ctx)
	if err != nil {
		return nil, fmt.Errorf("terraform output: %w", err)
	}
	out := make(map[string]Output, len(metas))
	for name, m := range metas {
		out[name] = Output{Value: m.Value, Sensitive: m.Sensitive}
	}
	return out, nil
}

// DeleteWorkspace removes the work dir's workspace from the backend once its state is empty
// (after Destroy); Terraform refuses to delete a workspace that still tracks resources. The
// work dir is left on the default workspace: call only Close afterwards.
func (w *Workdir) DeleteWorkspace(ctx context.Context) error {
	defer w.flush()
	if err := w.logged.WorkspaceSelect(ctx, "default"); err != nil {
		return fmt.Errorf("delete workspace %s: select default: %w", w.workspace, err)
	}
	if err := w.logged.WorkspaceDelete(ctx, w.workspace, tfexec.LockTimeout(w.r.cfg.LockTimeout.String())); err != nil {
		return fmt.Errorf("delete workspace %s: %w", w.workspace, err)
	}
	return nil
}

func (w *Workdir) flush() {
	w.stdout.flush()
	w.stderr.flush()
}
