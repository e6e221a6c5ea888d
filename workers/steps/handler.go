package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"

	"horizon/shared/answers"
	"horizon/shared/gate"
	"horizon/shared/gitsource"
	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/terraform"
	"horizon/workers/attempt"
)

// Handler runs step:run tasks: it is the step kind of a stack's builds and destroys, and
// attempt.Lifecycle does the rest of each attempt. Every field is required and safe for
// concurrent use.
type Handler struct {
	attempt.Lifecycle
	Box       *secrets.Box
	Git       *gitsource.Cache
	Terraform *terraform.Runner
	// ScriptSSHTimeout bounds the wait for a new machine's SSH server to answer.
	ScriptSSHTimeout time.Duration
	// VMSSHPort is the machine's SSH port when its module has no "ssh_port" output; 0 is 22.
	VMSSHPort int
}

// ProcessTask implements asynq.Handler.
func (h *Handler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	return attempt.Process(ctx, &h.Lifecycle, h, t)
}

// Unneeded implements attempt.Kind: a step that is here only because a job it depends on ran
// has nothing to do when that job's outputs did not change its inputs.
func (h *Handler) Unneeded(w *stepWork) string {
	if w.Step.OnlyIfChanged && w.inputsErr == nil && w.exec.AppliedHash != nil &&
		w.effective.Hash(w.exec.Commit, answers.Attachments(w.exec.Config)) == *w.exec.AppliedHash {
		return "inputs unchanged"
	}
	return ""
}

// Do implements attempt.Kind: it builds, updates or destroys the execution.
func (h *Handler) Do(ctx context.Context, w *stepWork, out *attempt.Log, lease *gate.Lease) (attempt.Result, error) {
	var result outcome
	var err error
	switch w.Step.Kind {
	case horizon.StepApply:
		result, err = h.apply(ctx, w, out, lease)
	case horizon.StepDestroy:
		result, err = h.destroy(ctx, w, out)
	default:
		err = fmt.Errorf("unknown step kind %q", w.Step.Kind)
	}
	if err != nil {
		return attempt.Result{}, err
	}
	return attempt.Result{Record: func(ctx context.Context, tx pgx.Tx) error { return result.record(ctx, tx, w) }}, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
