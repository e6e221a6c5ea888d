package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"horizon/shared/answers"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/store"
	"horizon/shared/template"
	"horizon/shared/terraform"
	"horizon/workers/attempt"
)

// stepWork is everything one attempt of a step needs, read from Postgres at its start.
type stepWork struct {
	attempt.Loaded
	stack horizon.Stack
	exec  horizon.Execution
	def   *template.Definition
	job   *template.Job

	server  *horizon.ProxmoxServer // machine jobs
	node    *horizon.ProxmoxNode
	address *horizon.Address
	network *horizon.Network
	userKey *horizon.SSHKey
	// iso is the built ISO the machine uses (jobs with iso: true); isoReach says how its node
	// reaches it, or isoErr why it cannot.
	iso      *horizon.ISO
	isoReach string
	isoErr   error
	// isoCopy is the volume of the node's copy of the ISO's image, when the node cannot reach
	// the storage it was built on (isoOnNode).
	isoCopy string
	// effective are the answers the step applies with.
	effective answers.Effective
	// inputsErr is why the inputs could not be resolved, if they could not.
	inputsErr error
	// secretOutputs are the execution's current secret outputs (opened).
	secretOutputs map[string]string
	// wd is the apply's work dir, initialised (Prepare); wdCleanup removes it.
	wd        *terraform.Workdir
	wdCleanup func()
	// snippet is a machine's cloud-init readied for its node (Prepare); wdCleanup closes it.
	snippet *snippet
}

func (w *stepWork) machine() bool { return w.job.Machine }

// Load implements attempt.Kind: it reads what the attempt needs. The masker learns every
// secret the step could print: secret parameters, outputs of the execution and of its inputs'
// sources, the Proxmox token, keys. With a *attempt.Gone it also returns the work read so far
// (step, run, stack, execution), enough to fail the step.
func (h *Handler) Load(ctx context.Context, a attempt.Loaded) (*stepWork, error) {
	if a.Step.ExecutionID == nil || a.Run.StackID == nil {
		return nil, attempt.ErrStale
	}
	step := a.Step
	w := &stepWork{Loaded: a}
	w.Label = fmt.Sprintf("%s of %s[%d]", step.Kind, step.Job, deref(step.ExecutionIndex))
	var err error
	all := auth.Scope{All: true}
	if w.stack, err = store.StackGet(ctx, h.DB, all, *w.Run.StackID); err != nil {
		return nil, err
	}
	w.StackID, w.TeamID = w.stack.ID, w.stack.TeamID
	if w.exec, err = store.ExecutionGet(ctx, h.DB, *step.ExecutionID); err != nil {
		return nil, err
	}
	// A destroy of a job an upgrade removed runs the code of the version that created it.
	version := w.stack.TemplateVersion
	if step.TemplateVersion != nil {
		version = *step.TemplateVersion
	}
	tv, err := store.TemplateVersionGet(ctx, h.DB, w.stack.TemplateID, version)
	if err != nil {
		return nil, err
	}
	w.def = &template.Definition{}
	if err := json.Unmarshal(tv.Definition, w.def); err != nil {
		return nil, fmt.Errorf("decode template %s version %d: %w", w.stack.TemplateID, version, err)
	}
	if w.job = w.def.Job(step.Job); w.job == nil {
		return nil, fmt.Errorf("template %s version %d has no job %s", w.stack.TemplateID, version, step.Job)
	}
	if err := h.loadMachine(ctx, w); err != nil {
		var g *attempt.Gone
		if errors.As(err, &g) {
			return w, err
		}
		return nil, err
	}
	if err := h.loadAnswers(ctx, w); err != nil {
		return nil, err
	}
	h.seed(ctx, w)
	return w, nil
}

func (h *Handler) loadMachine(ctx context.Context, w *stepWork) error {
	if !w.machine() {
		return nil
	}
	cfg := w.exec.Config
	if cfg.ProxmoxServerID == nil {
		return fmt.Errorf("execution %s has no Proxmox server", w.exec.ID)
	}
	what := fmt.Sprintf("%s[%d]", w.exec.Job, w.exec.Index)
	srv, err := store.ProxmoxServerGet(ctx, h.DB, *cfg.ProxmoxServerID)
	if err != nil {
		return attempt.IfNotFound(err, "the Proxmox server %s of %s no longer exists", *cfg.ProxmoxServerID, what)
	}
	w.server = &srv
	if w.node = srv.Node(cfg.Node); w.node == nil {
		return &attempt.Gone{Msg: fmt.Sprintf("node %s of %s is no longer in server %s's inventory", cfg.Node, what, srv.Name)}
	}
	if token, err := h.Box.OpenString(horizon.PurposeProxmoxTokenSecret, srv.TokenSecret); err == nil {
		w.Masker.Add(token.Reveal())
	}
	if cfg.AddressID != nil {
		err := store.WithTx(ctx, h.DB, func(ctx context.Context, tx pgx.Tx) error {
			a, err := store.AddressByID(ctx, tx, *cfg.AddressID)
			if err != nil {
				return err
			}
			n, err := store.NetworkGet(ctx, tx, a.NetworkID)
			w.address, w.network = &a, &n
			return err
		})
		if err != nil {
			return attempt.IfNotFound(err, "the address %s of %s no longer exists", *cfg.AddressID, what)
		}
	}
	if cfg.SSHKeyID != nil {
		// The key must still be one the stack's team may use (its owner may have deleted it, or
		// left the team). A destroy does without it: the key only goes into cloud-init.
		k, err := store.SSHKeyForTeam(ctx, h.DB, *cfg.SSHKeyID, w.stack.TeamID)
		switch {
		case err == nil:
			w.userKey = &k
		case w.Step.Kind == horizon.StepApply || !errors.Is(err, horizon.ErrNotFound):
			return attempt.IfNotFound(err, "the SSH key %s of %s was deleted or is no longer a key of a member of the stack's team: edit the stack to pick another", *cfg.SSHKeyID, what)
		}
	}
	if w.job.ISO && cfg.ISOID != nil {
		iso, err := store.ISOGet(ctx, h.DB, *cfg.ISOID)
		if err != nil {
			return attempt.IfNotFound(err, "the ISO %s of %s no longer exists", *cfg.ISOID, what)
		}
		w.iso = &iso
		w.isoReach, w.isoErr = iso.Reach(srv.ID, srv.Storages, cfg.Node)
	}
	return nil
}

// loadAnswers opens the execution's secrets and resolves its inputs from the outputs of the
// jobs it depends on.
func (h *Handler) loadAnswers(ctx context.Context, w *stepWork) error {
	secretParams, err := h.openMap(horizon.PurposeSecretParameters, w.exec.SecretParameters)
	if err != nil {
		return err
	}
	if w.secretOutputs, err = h.openMap(horizon.PurposeSecretOutputs, w.exec.SecretOutputs); err != nil {
		return err
	}
	for _, v := range w.secretOutputs {
		w.Masker.Add(v)
	}
	outputs, err := h.stackOutputs(ctx, w)
	if err != nil {
		return err
	}
	ef, err := answers.Resolve(w.job, w.exec.Config.Parameters, secretParams, outputs)
	w.Masker.Add(ef.Secrets...)
	w.effective = ef
	// An input that cannot be resolved fails the step when it runs, with this reason.
	w.inputsErr = err
	return nil
}

// stackOutputs reads the outputs of every active execution of the stack, secret ones opened
// (and taught to the step's masker), for resolving inputs.
func (h *Handler) stackOutputs(ctx context.Context, w *stepWork) (answers.Outputs, error) {
	execs, err := store.ExecutionsOfStack(ctx, h.DB, w.stack.ID, false)
	if err != nil {
		return nil, err
	}
	byJob := map[string][]map[string]any{}
	for _, e := range execs {
		if e.State != horizon.ExecutionActive {
			continue
		}
		m := map[string]any{}
		for k, v := range e.Outputs {
			m[k] = v
		}
		secret, err := h.openMap(horizon.PurposeSecretOutputs, e.SecretOutputs)
		if err != nil {
			return nil, err
		}
		for k, v := range secret {
			m[k] = v
			w.Masker.Add(v)
		}
		byJob[e.Job] = append(byJob[e.Job], m)
	}
	return func(job string) []map[string]any { return byJob[job] }, nil
}

func (h *Handler) openMap(purpose string, sealed []byte) (map[string]string, error) {
	if len(sealed) == 0 {
		return map[string]string{}, nil
	}
	b, err := h.Box.Open(purpose, sealed)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", purpose, err)
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", purpose, err)
	}
	return m, nil
}

func (h *Handler) sealMap(purpose string, m map[string]string) []byte {
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m) // a map of strings always marshals
	return h.Box.Seal(purpose, b)
}
