package isos

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"

	"horizon/shared/gate"
	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/store"
	"horizon/workers/attempt"
)

// Handler runs iso:stage tasks: it is the step kind of an ISO's stages, and attempt.Lifecycle
// does the rest of each attempt. Every field is required unless it says otherwise; it is safe
// for concurrent use.
type Handler struct {
	attempt.Lifecycle
	Box *secrets.Box
	// DownloadAttempts (default 3) bounds the image download's attempts. RetryBackoff (default
	// 10 s) is the first pause between attempts of a download or of a Proxmox call that failed
	// transiently; it doubles after each.
	DownloadAttempts int
	RetryBackoff     time.Duration
	// TaskPoll is how often a Proxmox task is polled while it runs (default 500 ms).
	TaskPoll time.Duration
	// ProxmoxTimeout bounds one Proxmox API request (default 30 s).
	ProxmoxTimeout time.Duration
}

// result is what a finished stage reports: why it had nothing to do (skipped), or what it did,
// and the outputs to record with the step's end.
type result struct {
	skipped bool
	reason  string
	outputs []output
}

// output is one ISOOutputSet: key "image" or "vm", or a clone by name; value nil removes it.
type output struct {
	key, clone string
	value      any
}

// ProcessTask implements asynq.Handler.
func (h *Handler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	return attempt.Process(ctx, &h.Lifecycle, h, t)
}

// Unneeded implements attempt.Kind: each stage finds out itself, once it runs, whether what
// it makes exists already.
func (h *Handler) Unneeded(*work) string { return "" }

// Do implements attempt.Kind: it runs the stage, all of it under the node's gate when it takes
// one.
func (h *Handler) Do(ctx context.Context, w *work, out *attempt.Log, lease *gate.Lease) (attempt.Result, error) {
	var res result
	err := attempt.UnderLease(ctx, lease, func(ctx context.Context) error {
		var err error
		res, err = h.runStage(ctx, w, out)
		return err
	})
	if err != nil {
		return attempt.Result{}, err
	}
	return attempt.Result{Skipped: res.skipped, Reason: res.reason, Record: func(ctx context.Context, tx pgx.Tx) error {
		return h.record(ctx, tx, w, res.outputs)
	}}, nil
}

// runStage dispatches on the step's kind.
func (h *Handler) runStage(ctx context.Context, w *work, out *attempt.Log) (result, error) {
	c, err := h.client(w)
	if err != nil {
		return result{}, err
	}
	switch w.Step.Kind {
	case horizon.StepISOPreflight:
		return h.preflight(ctx, c, w, out)
	case horizon.StepISOImage:
		return h.image(ctx, c, w, out)
	case horizon.StepISOVMCreate:
		return h.vmCreate(ctx, c, w, out)
	case horizon.StepISOVMConfigure:
		return h.vmConfigure(ctx, c, w, out)
	case horizon.StepISOTemplate:
		return h.template(ctx, c, w, out)
	case horizon.StepISOClone:
		return h.clone(ctx, c, w, out)
	case horizon.StepISORemove:
		return h.remove(ctx, c, w, out)
	}
	return result{}, fmt.Errorf("unknown ISO step kind %q", w.Step.Kind)
}

// record writes a stage's outputs in the transaction that finishes it.
func (h *Handler) record(ctx context.Context, tx pgx.Tx, w *work, outputs []output) error {
	for _, o := range outputs {
		var value any
		if o.value != nil {
			b, err := json.Marshal(o.value)
			if err != nil {
				return fmt.Errorf("encode output %s: %w", o.key, err)
			}
			value = string(b)
		}
		if err := store.ISOOutputSet(ctx, tx, w.iso.ID, o.key, o.clone, value); err != nil {
			return err
		}
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
