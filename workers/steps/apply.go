package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"horizon/shared/answers"
	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/logstream"
	"horizon/shared/proxmox"
	"horizon/shared/store"
	"horizon/shared/template"
	"horizon/shared/terraform"
	"horizon/workers/attempt"
)

// outcome is what a successful step leaves in Postgres.
type outcome struct {
	destroyed     bool
	hash          string
	outputs       map[string]any
	sealedSecrets []byte
	// vm is what the apply set on its machine, for drift checks (nil when it could not be
	// read back: the previous record stays).
	vm *vmCapture
}

// record writes the outcome in the transaction that finishes the step.
func (o *outcome) record(ctx context.Context, tx pgx.Tx, w *stepWork) error {
	if o.destroyed {
		if err := store.ExecutionSetState(ctx, tx, w.exec.ID, horizon.ExecutionRemoved); err != nil {
			return err
		}
		if err := store.VMRecordDelete(ctx, tx, w.exec.ID); err != nil {
			return err
		}
		if err := store.VMIDRelease(ctx, tx, w.exec.ID); err != nil {
			return err
		}
		return store.AddressDetach(ctx, tx, w.exec.ID)
	}
	if o.vm != nil {
		if err := store.VMRecordPut(ctx, tx, o.vm.rec, o.vm.keep); err != nil {
			return err
		}
	}
	return store.ExecutionApplied(ctx, tx, w.exec.ID, o.hash, o.outputs, o.sealedSecrets)
}

// transientRetries is how often a Terraform run that failed on a known transient Proxmox error
// is tried again inside the step, and transientBackoff the first pause (doubled each time).
const (
	transientRetries = 3
	transientBackoff = 2 * time.Second
)

// apply builds or updates the execution.
func (h *Handler) apply(ctx context.Context, w *stepWork, out *attempt.Log, lease *gate.Lease) (outcome, error) {
	defer func() { // the work dir, prepared here or while the step waited for its node
		if w.wdCleanup != nil {
			w.wdCleanup()
		}
	}()
	if w.inputsErr != nil {
		return outcome{}, w.inputsErr
	}
	if w.isoErr != nil {
		return outcome{}, w.isoErr
	}
	if a, ok := isoArtifact(w); ok {
		out.Say("ISO %s: %s, reached on %s", w.iso.Name, a.Value, w.isoReach)
	}
	if err := h.isoOnNode(ctx, w, out); err != nil {
		return outcome{}, err
	}
	if w.wd == nil { // not prepared while waiting for the node: now, under its gate
		if _, err := h.prepare(ctx, w, out); err != nil {
			return outcome{}, err
		}
	}
	wd := w.wd
	// The upload and the build happen under the node's gate: if the lease is lost, they stop.
	// The upload stays under it: a node's storage takes one build's files at a time (the
	// sandbox refuses a second concurrent upload on a node, as the sign of a broken gate).
	err := attempt.UnderLease(ctx, lease, func(guarded context.Context) error {
		if w.machine() {
			volid, err := h.uploadCloudInit(guarded, w, out)
			if err != nil {
				return err
			}
			out.Say("cloud-init uploaded to %s as %s", w.node.Name, volid)
		}
		return retryTransient(guarded, out, "terraform apply", wd.Apply)
	})
	if err != nil {
		return outcome{}, err
	}
	if lease != nil {
		// The node's gate guards the upload and the build; scripts run on the machine and
		// need not hold up the next build on this node.
		if _, err := lease.Release(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, gate.ErrNotHolder) {
			out.Say("warning: could not release node %s's build gate early: %v", w.node.Name, err)
		}
	}
	outputs, secretOutputs, err := moduleOutputs(ctx, wd, w)
	if err != nil {
		return outcome{}, err
	}
	// Read back before the scripts, which do not go through Proxmox: what the module set.
	vm := h.captureVM(ctx, w, out, outputs)
	if len(w.job.Scripts) > 0 {
		scripted, err := h.runScripts(ctx, w, out, outputs, w.job.Scripts, "scripts")
		if err != nil {
			return outcome{}, err
		}
		if err := checkOutputs(w.job.Outputs, scripted); err != nil {
			return outcome{}, err
		}
		for k, v := range scripted.outputs {
			outputs[k] = v
		}
		for k, v := range scripted.secrets {
			secretOutputs[k] = v
		}
	}
	names := make([]string, 0, len(outputs)+len(secretOutputs))
	for k := range outputs {
		names = append(names, k)
	}
	for k := range secretOutputs {
		names = append(names, k+" (secret)")
	}
	out.Say("outputs: %s", strings.Join(sorted(names), ", "))
	return outcome{hash: w.effective.Hash(w.exec.Commit, answers.Attachments(w.exec.Config)), outputs: outputs,
		sealedSecrets: h.sealMap(horizon.PurposeSecretOutputs, secretOutputs), vm: vm}, nil
}

// moduleOutputs reads the module's outputs after an apply: sensitive ones apart (and taught to
// the step's masker), as strings.
func moduleOutputs(ctx context.Context, wd *terraform.Workdir, w *stepWork) (map[string]any, map[string]string, error) {
	tfOutputs, err := wd.Outputs(ctx)
	if err != nil {
		return nil, nil, err
	}
	outputs, secretOutputs := map[string]any{}, map[string]string{}
	for name, o := range tfOutputs {
		var v any
		if err := json.Unmarshal(o.Value, &v); err != nil {
			return nil, nil, fmt.Errorf("decode output %s: %w", name, err)
		}
		if o.Sensitive {
			s := stringValue(v)
			secretOutputs[name] = s
			w.Masker.Add(s)
			continue
		}
		outputs[name] = v
	}
	return outputs, secretOutputs, nil
}

// Prepare implements attempt.Preparer: an apply's module is checked out and initialised while
// the step waits for its node's build gate, which is then held for the upload and the build
// only. A step whose inputs or ISO are wrong prepares nothing: Do reports it.
func (h *Handler) Prepare(ctx context.Context, w *stepWork, out *attempt.Log) (func(), error) {
	if w.Step.Kind != horizon.StepApply || w.inputsErr != nil || w.isoErr != nil {
		return nil, nil
	}
	return h.prepare(ctx, w, out)
}

// prepare makes the step's work dir and runs terraform init in it, and readies a machine's
// cloud-init (rendered, its node connected); Do releases both (w.wdCleanup).
func (h *Handler) prepare(ctx context.Context, w *stepWork, out *attempt.Log) (func(), error) {
	wd, cleanWD, err := h.workdir(ctx, w, out)
	if err != nil {
		return nil, err
	}
	if err := retryTransient(ctx, out, "terraform init", wd.Init); err != nil {
		cleanWD()
		return nil, err
	}
	var sn *snippet
	if w.machine() {
		if sn, err = h.readyCloudInit(ctx, w); err != nil {
			cleanWD()
			return nil, err
		}
		// The node connected now leaves only the write for its gate. Connecting is an
		// optimisation here: a failure is tried again, and reported, under the gate.
		_ = sn.connect(ctx, h, w)
	}
	cleanup := func() {
		sn.close()
		cleanWD()
	}
	w.wd, w.wdCleanup, w.snippet = wd, cleanup, sn
	return cleanup, nil
}

// seed makes sure this host has the apply's module initialised at its commit
// (terraform.Runner.Seed), before the step claims its node: the work dir is then a copy and
// runs no init, so a build never waits for another's init (the plugin cache's host-wide lock)
// or checkout (the repository's lock) while holding a node's build gate. It is an optimisation
// only: when it fails, Prepare runs init itself and the step's log says why it failed.
func (h *Handler) seed(ctx context.Context, w *stepWork) {
	if w.Step.Kind != horizon.StepApply || w.inputsErr != nil || w.isoErr != nil || w.exec.Commit == "" {
		return
	}
	if err := h.warmModule(ctx, w.job.Source.Repo, w.exec.Commit, w.job.Source.Path); err != nil && ctx.Err() == nil {
		h.Log.DebugContext(ctx, "module not seeded: the step's Prepare runs terraform init", "step_id", w.Step.ID, "error", err)
	}
}

// workdir prepares the execution's Terraform work dir from the pinned commit.
func (h *Handler) workdir(ctx context.Context, w *stepWork, out *attempt.Log) (*terraform.Workdir, func(), error) {
	vars, err := h.variables(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	return h.moduleWorkdir(ctx, w, out, w.job.Source, w.exec.Commit, workspace(w), vars)
}

// moduleWorkdir prepares a Terraform work dir of the module src at commit, in workspace, with
// the candidate variables vars and the Proxmox environment of the step's server (if any): an
// execution's (workdir) or a terraform action instance's.
func (h *Handler) moduleWorkdir(ctx context.Context, w *stepWork, out *attempt.Log, src template.Source, commit, ws string,
	vars map[string]any) (*terraform.Workdir, func(), error) {
	repo := src.Repo
	tree, err := h.checkout(ctx, repo, commit)
	if err != nil {
		return nil, nil, fmt.Errorf("check out %s at %s: %w", repo, shortCommit(commit), err)
	}
	out.Say("module %s at commit %s", filepath.Join(repo, src.Path), shortCommit(commit))
	tmp, err := os.MkdirTemp("", "horizon-step-")
	if err != nil {
		return nil, nil, err
	}
	env, err := h.proxmoxEnv(ctx, w, tmp)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, nil, err
	}
	wd, err := h.Terraform.Prepare(ctx, terraform.PrepareOpts{Source: tree, Commit: commit, Module: src.Path, Workspace: ws,
		Vars: vars, Env: env, Sink: func(stream terraform.Stream, line string) { out.Line(logstream.FD(stream), line) }})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, nil, err
	}
	return wd, func() {
		if err := wd.Close(); err != nil {
			out.Say("warning: %v", err)
		}
		_ = os.RemoveAll(tmp) // holds only the CA bundle
	}, nil
}

// workspace is the execution's Terraform workspace: stable for its whole life.
func workspace(w *stepWork) string {
	return horizon.Workspace(w.stack.ID, w.exec.Job, w.exec.Index)
}

// retryTransient runs op, trying it again with backoff while it fails on an error Proxmox
// reports for a lock held or a timeout (PVE raises them before changing anything).
func retryTransient(ctx context.Context, out *attempt.Log, what string, op func(context.Context) error) error {
	pause := transientBackoff
	for try := 1; ; try++ {
		err := op(ctx)
		if err == nil || try > transientRetries || !transient(err) || ctx.Err() != nil {
			return err
		}
		out.Say("%s hit a transient Proxmox error (%s); retrying in %s (%d/%d)", what, attempt.FirstLine(transientLine(err)), pause, try, transientRetries)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause *= 2
	}
}

func transient(err error) bool { return transientLine(err) != "" }

// transientLine returns the line of err (Terraform's output: a provider's or a script's words)
// that marks it as a transient Proxmox error, or "".
func transientLine(err error) string {
	for _, line := range strings.Split(err.Error(), "\n") {
		if proxmox.TransientMessage(line) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

func stringValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
