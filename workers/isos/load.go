package isos

import (
	"context"
	"errors"
	"fmt"

	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// errStale: the delivery is for an attempt that no longer owns the step.
var errStale = errors.New("stale step delivery")

// work is everything one attempt of an ISO step needs, read from Postgres at its start.
type work struct {
	step   horizon.Step
	run    horizon.Run
	iso    horizon.ISO
	spec   *isotemplate.Spec
	stage  isotemplate.Stage // "" for the removal
	server horizon.ProxmoxServer
	node   *horizon.ProxmoxNode
	// masker hides the Proxmox token and the node key, should an error quote them.
	masker *secrets.Masker
}

// label names the step in log lines and errors: its stage, clones[n] for a clone.
func (w *work) label() string {
	if w.step.Kind == horizon.StepISORemove {
		return "removal"
	}
	return isotemplate.StepLabel(w.step)
}

func (h *Handler) load(ctx context.Context, p queue.StepRun) (*work, error) {
	step, err := store.StepGet(ctx, h.DB, p.StepID)
	if errors.Is(err, horizon.ErrNotFound) {
		return nil, errStale
	}
	if err != nil {
		return nil, err
	}
	if step.Attempt != p.Attempt || (step.State != horizon.StepQueued && step.State != horizon.StepRunning) || !step.Kind.ISO() {
		return nil, errStale
	}
	w := &work{step: step, masker: &secrets.Masker{}}
	if w.run, err = store.RunGet(ctx, h.DB, step.RunID); err != nil {
		return nil, err
	}
	if w.run.ISOID == nil {
		return nil, fmt.Errorf("run %s of step %s has no ISO", w.run.ID, step.ID)
	}
	if w.iso, err = store.ISOGet(ctx, h.DB, *w.run.ISOID); err != nil {
		return nil, err
	}
	v, err := store.ISOTemplateVersionGet(ctx, h.DB, w.iso.ISOTemplateID, w.iso.ISOTemplateVersion)
	if err != nil {
		return nil, err
	}
	if w.spec, err = isotemplate.Decode(v.Spec); err != nil {
		return nil, err
	}
	if step.Kind != horizon.StepISORemove {
		w.stage = isotemplate.Stage(step.Job)
	}
	if w.server, err = store.ProxmoxServerGet(ctx, h.DB, w.iso.ServerID); err != nil {
		return nil, err
	}
	w.node = w.server.Node(w.iso.Node)
	if token, err := h.Box.OpenString(horizon.PurposeProxmoxTokenSecret, w.server.TokenSecret); err == nil {
		w.masker.Add(token.Reveal())
	}
	if key, err := h.Box.OpenString(horizon.PurposeProxmoxSSHPrivateKey, w.server.SSHPrivateKey); err == nil {
		w.masker.Add(key.Reveal())
	}
	return w, nil
}
