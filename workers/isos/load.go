package isos

import (
	"context"
	"fmt"

	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/store"
	"horizon/workers/attempt"
)

// work is everything one attempt of an ISO step needs, read from Postgres at its start.
type work struct {
	attempt.Loaded
	iso    horizon.ISO
	spec   *isotemplate.Spec
	stage  isotemplate.Stage // "" for the removal
	server horizon.ProxmoxServer
	node   *horizon.ProxmoxNode
}

// label names the step in log lines and errors: its stage, clones[n] for a clone.
func (w *work) label() string {
	if w.Step.Kind == horizon.StepISORemove {
		return "removal"
	}
	return isotemplate.StepLabel(w.Step)
}

// Load implements attempt.Kind. The masker learns the Proxmox token and the node key, should
// an error quote them.
func (h *Handler) Load(ctx context.Context, a attempt.Loaded) (*work, error) {
	if !a.Step.Kind.ISO() {
		return nil, attempt.ErrStale
	}
	if a.Run.ISOID == nil {
		return nil, fmt.Errorf("run %s of step %s has no ISO", a.Run.ID, a.Step.ID)
	}
	step := a.Step
	w := &work{Loaded: a}
	w.ISOID = *a.Run.ISOID
	var err error
	if w.iso, err = store.ISOGet(ctx, h.DB, *w.Run.ISOID); err != nil {
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
	w.Label = fmt.Sprintf("%s of ISO %s", w.label(), w.iso.Name)
	if token, err := h.Box.OpenString(horizon.PurposeProxmoxTokenSecret, w.server.TokenSecret); err == nil {
		w.Masker.Add(token.Reveal())
	}
	if key, err := h.Box.OpenString(horizon.PurposeProxmoxSSHPrivateKey, w.server.SSHPrivateKey); err == nil {
		w.Masker.Add(key.Reveal())
	}
	return w, nil
}
