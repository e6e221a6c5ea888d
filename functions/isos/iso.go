package isos

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/store"
)

// ISO is an ISO as lists show it.
type ISO struct {
	ID                 uuid.UUID `json:"id"`
	Name               string    `json:"name"`
	ISOTemplateID      uuid.UUID `json:"iso_template_id"`
	ISOTemplateVersion int       `json:"iso_template_version"`
	Kind               string    `json:"kind"`
	ProxmoxServerID    uuid.UUID `json:"proxmox_server_id"`
	Node               string    `json:"node"`
	Storage            string    `json:"storage"`
	State              string    `json:"state"`
	// Outdated: the ISO was edited since its last successful build; the next run rebuilds.
	Outdated bool               `json:"outdated"`
	Outputs  horizon.ISOOutputs `json:"outputs"`
	// Artifact is what stacks use, once built.
	Artifact  *Artifact  `json:"artifact"`
	Version   int64      `json:"version"`
	CreatedBy *uuid.UUID `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// Artifact is what a stack's machine gets of a built ISO (horizon_iso) and where it lives.
type Artifact struct {
	Value   string `json:"value"`
	Storage string `json:"storage"`
	Shared  bool   `json:"shared"`
	Node    string `json:"node"`
}

// Detail is an ISO with its history, its run in progress, its latest run's stages and summary,
// and what may be done to it.
type Detail struct {
	ISO
	// Copies are the image's copies on nodes that cannot reach its storage (kind iso), made by
	// the first machine build on each.
	Copies         []Copy        `json:"copies"`
	AllowedActions []string      `json:"allowed_actions"`
	CurrentRun     *Run          `json:"current_run"`
	LastRun        *RunDetail    `json:"last_run"`
	History        []StateChange `json:"history"`
}

// Copy is an installer image copied to another node of the cluster.
type Copy struct {
	Node     string    `json:"node"`
	Storage  string    `json:"storage"`
	VolID    string    `json:"volid"`
	CopiedAt time.Time `json:"copied_at"`
}

// Run is an ISO's run (api.Run).
type Run = api.Run

// RunDetail is a run with its stages and its summary.
type RunDetail struct {
	Run
	Stages  []Stage             `json:"stages"`
	Summary isotemplate.Summary `json:"summary"`
}

// Stage is one step of an ISO run: a stage, or one clone of the clones stage.
type Stage struct {
	ID         uuid.UUID  `json:"id"`
	Stage      string     `json:"stage"`
	Clone      *int       `json:"clone"`
	State      string     `json:"state"`
	Attempt    int        `json:"attempt"`
	Reason     *string    `json:"reason"`
	Error      *string    `json:"error"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// StateChange is one entry of an ISO's state history.
type StateChange struct {
	From    *string    `json:"from"`
	To      string     `json:"to"`
	At      time.Time  `json:"at"`
	ActorID *uuid.UUID `json:"actor_id"`
	RunID   *uuid.UUID `json:"run_id"`
	Error   *string    `json:"error"`
}

// historyLength is how many state changes an ISO's detail shows, newest first.
const historyLength = 50

func capabilities(p auth.Principal) horizon.Capabilities {
	return horizon.Capabilities{Write: p.CanWrite(), Admin: p.IsAdmin()}
}

func toRun(r horizon.Run, can horizon.Capabilities) Run { return api.NewRun(r, runActions(r, can)) }

// runActions are the actions on an ISO's run: only admins change ISOs.
func runActions(r horizon.Run, can horizon.Capabilities) []string {
	if !can.Admin {
		return []string{}
	}
	return horizon.RunActions(r.State, can)
}

func toISO(i horizon.ISO, storages []horizon.ProxmoxStorage) ISO {
	out := ISO{ID: i.ID, Name: i.Name, ISOTemplateID: i.ISOTemplateID, ISOTemplateVersion: i.ISOTemplateVersion, Kind: string(i.Kind),
		ProxmoxServerID: i.ServerID, Node: i.Node, Storage: i.Storage, State: string(i.State), Outdated: i.Outdated(),
		Outputs: i.Outputs, Version: i.Version, CreatedBy: i.CreatedBy, CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt}
	if a, ok := i.Artifact(); ok && i.State != horizon.ISORemoved {
		shared := slices.ContainsFunc(storages, func(s horizon.ProxmoxStorage) bool { return s.Name == a.Storage && s.Shared })
		out.Artifact = &Artifact{Value: a.Value, Storage: a.Storage, Shared: shared, Node: a.Node}
	}
	return out
}

// detail reads everything an ISO's detail shows.
func detail(ctx context.Context, q store.Querier, i horizon.ISO, who auth.Principal) (Detail, error) {
	srv, err := store.ProxmoxServerGet(ctx, q, i.ServerID)
	if err != nil {
		return Detail{}, err
	}
	can := capabilities(who)
	d := Detail{ISO: toISO(i, srv.Storages), History: []StateChange{}, Copies: []Copy{}}
	copies, err := store.ISOCopies(ctx, q, i.ID)
	if err != nil {
		return d, err
	}
	for _, c := range copies {
		d.Copies = append(d.Copies, Copy{Node: c.Node, Storage: c.Storage, VolID: c.VolID, CopiedAt: c.CopiedAt})
	}
	last, err := store.RunLatest(ctx, q, store.OfISO(i.ID))
	switch {
	case errors.Is(err, horizon.ErrNotFound):
	case err != nil:
		return d, err
	default:
		steps, err := store.StepsOfRun(ctx, q, last.ID)
		if err != nil {
			return d, err
		}
		rd := &RunDetail{Run: toRun(last, can), Stages: make([]Stage, len(steps)), Summary: isotemplate.Summarize(steps)}
		for k, s := range steps {
			rd.Stages[k] = Stage{ID: s.ID, Stage: s.Job, Clone: s.ExecutionIndex, State: string(s.State), Attempt: s.Attempt,
				Reason: s.Reason, Error: s.Error, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt}
		}
		d.LastRun = rd
		if !last.State.Terminal() {
			r := toRun(last, can)
			d.CurrentRun = &r
		}
	}
	d.AllowedActions = horizon.ISOActions(i.State, d.CurrentRun != nil, can)
	hs, _, err := store.ISOHistory(ctx, q, i.ID, store.Page{Limit: historyLength})
	if err != nil {
		return d, err
	}
	for _, h := range hs {
		var from *string
		if h.From != nil {
			f := string(*h.From)
			from = &f
		}
		d.History = append(d.History, StateChange{From: from, To: string(h.To), At: h.At, ActorID: h.ActorID, RunID: h.RunID, Error: h.Error})
	}
	return d, nil
}
