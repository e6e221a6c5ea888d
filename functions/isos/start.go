package isos

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// StagesRequest selects the stages a run runs.
type StagesRequest struct {
	Only []string `json:"only"`
	Skip []string `json:"skip"`
}

func (s *StagesRequest) selection() isotemplate.Selection {
	if s == nil {
		return isotemplate.Selection{}
	}
	return isotemplate.Selection{Only: s.Only, Skip: s.Skip}
}

// specOf reads an ISO template version and decodes its spec.
func specOf(ctx context.Context, q store.Querier, template horizon.ISOTemplate, number int) (*isotemplate.Spec, horizon.ISOTemplateVersion, error) {
	v, err := store.ISOTemplateVersionGet(ctx, q, template.ID, number)
	if err != nil {
		return nil, v, err
	}
	spec, err := isotemplate.Decode(v.Spec)
	return spec, v, err
}

// vmIDs are the VM ids a spec names, which the ISO reserves in its cluster.
func vmIDs(spec *isotemplate.Spec) []int {
	if spec.VM == nil {
		return []int{}
	}
	ids := []int{spec.VM.VMID}
	for _, c := range spec.Clones {
		ids = append(ids, c.VMID)
	}
	return ids
}

// reserve reserves the spec's VM ids for the ISO; an id held by another ISO or a stack is 409.
func reserve(ctx context.Context, tx pgx.Tx, iso horizon.ISO, spec *isotemplate.Spec) error {
	err := store.VMIDReserveISO(ctx, tx, iso.ServerID, iso.ID, vmIDs(spec))
	var taken *store.VMIDTakenError
	if errors.As(err, &taken) {
		return problem.Conflict("The template's VM id %d is already reserved in this cluster by %s.", taken.VMID, taken.Holder)
	}
	return err
}

// How a run of an ISO starts: a build (create, retry) or a removal (delete, retry) is
// startRunOn and its decision; create, whose ISO is new, is startRun and accepted.

// runOwner is an ISO as the owner of runs (api.RunOwner): a catalogue object, whose runs only
// admins change.
var runOwner = api.RunOwner{
	Noun: "iso",
	Name: "ISO",
	Lock: func(ctx context.Context, tx pgx.Tx, _ auth.Principal, id uuid.UUID) (api.OwnerRef, error) {
		iso, err := store.ISOGetForUpdate(ctx, tx, id)
		if err != nil {
			return api.OwnerRef{}, err
		}
		return api.OwnerRef{Runs: store.OfISO(iso.ID), ID: iso.ID, ISOID: iso.ID}, nil
	},
	Location: func(iso, _ uuid.UUID) string { return "/v1/isos/" + iso.String() },
	Actions:  func(r horizon.Run, who auth.Principal) []string { return runActions(r, capabilities(who)) },
}

// launch is what a decision starts: a run of kind with steps, moving the ISO to state to.
type launch struct {
	kind  horizon.RunKind
	steps []horizon.Step
	to    horizon.ISOState
}

// build is a build run of the ISO with one step per stage (sel narrows them).
func build(iso horizon.ISO, spec *isotemplate.Spec, sel isotemplate.Selection) launch {
	return launch{kind: horizon.RunISOBuild, steps: isotemplate.Steps(spec, iso.Kind, sel, iso), to: horizon.ISOBuilding}
}

// removal is a removal run of the ISO: one step, through the node's gate.
func removal(iso horizon.ISO) launch {
	step := horizon.Step{Phase: 0, PhaseName: "remove", Job: "remove", Kind: horizon.StepISORemove, ServerID: &iso.ServerID, Node: &iso.Node}
	return launch{kind: horizon.RunISORemove, steps: []horizon.Step{step}, to: horizon.ISORemoving}
}

// startRunOn is how a run of an existing ISO starts. In one transaction it locks the ISO at id
// (404) and refuses while a run of it is in progress (409 naming it); decide then refuses
// (409, 422) or says what to run, and startRun starts it. After the commit the run is
// announced and the answer is 202 with the ISO and its ETag.
func startRunOn(c *fiber.Ctx, d api.Deps, who auth.Principal, id uuid.UUID, decide func(ctx context.Context, tx pgx.Tx, iso horizon.ISO) (launch, error)) error {
	var iso horizon.ISO
	var run horizon.Run
	out, err := store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (Detail, error) {
		var err error
		if iso, err = store.ISOGetForUpdate(ctx, tx, id); err != nil {
			return Detail{}, err
		}
		if err := runOwner.NotBusy(ctx, tx, store.OfISO(iso.ID)); err != nil {
			return Detail{}, err
		}
		start, err := decide(ctx, tx, iso)
		if err != nil {
			return Detail{}, err
		}
		if run, err = startRun(ctx, tx, iso, start, who); err != nil {
			return Detail{}, err
		}
		if iso, err = store.ISOGet(ctx, tx, iso.ID); err != nil {
			return Detail{}, err
		}
		return detail(ctx, tx, iso, who)
	})
	if err != nil {
		return err
	}
	return accepted(c, d, iso, run, out)
}

// startRun writes the run start launches and its steps, moves the ISO to its state and records
// the activity.
func startRun(ctx context.Context, tx pgx.Tx, iso horizon.ISO, start launch, who auth.Principal) (horizon.Run, error) {
	run, _, err := store.RunInsertWithSteps(ctx, tx, horizon.Run{ISOID: &iso.ID, Kind: start.kind, ActorID: &who.UserID}, start.steps)
	if err != nil {
		return run, runOwner.Started(err)
	}
	change := horizon.ISOStateChange{ISOID: iso.ID, RunID: &run.ID, To: start.to, ActorID: &who.UserID}
	if iso.State == start.to {
		// A new ISO is inserted building: record where it came from (nothing) and why.
		err = store.ISOStateRecord(ctx, tx, change)
	} else {
		_, err = store.ISOSetState(ctx, tx, change)
	}
	if err != nil {
		return run, err
	}
	return run, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "iso." + string(start.kind), ObjectType: "iso",
		ObjectID: &iso.ID, Details: map[string]any{"run_id": run.ID, "steps": len(start.steps)}})
}

// accepted announces the started run with the ISO's new state and answers 202 with the ISO
// (out) and its ETag.
func accepted(c *fiber.Ctx, d api.Deps, iso horizon.ISO, run horizon.Run, out Detail) error {
	c.Set(fiber.HeaderETag, api.ETag(out.Version))
	return runOwner.Accepted(c, d, iso.ID, run, out,
		events.Event{Type: events.ISO, ID: iso.ID, State: string(iso.State)},
		events.Event{Type: events.Run, ID: run.ID, ISOID: iso.ID, RunID: run.ID, State: string(run.State)})
}

// checkPlacement records what keeps spec from being built on node with its image on storage,
// as far as Horizon's inventory of the server knows (the build's preflight asks the cluster
// itself), and returns the storage what it builds lives on.
func checkPlacement(p *horizon.Problems, srv horizon.ProxmoxServer, node, storage string, kind horizon.ISOKind, spec *isotemplate.Spec) string {
	n := srv.Node(node)
	switch {
	case node == "":
		p.Add("node", "is required")
	case n == nil:
		p.Add("node", "is not a node of %s", srv.Name)
	case !n.Online:
		p.Add("node", "is offline (as of the last refresh of %s)", srv.Name)
	}
	onNode := func(field, name, content, what string) {
		i := slices.IndexFunc(srv.Storages, func(s horizon.ProxmoxStorage) bool { return s.Name == name })
		switch {
		case name == "":
			p.Add(field, "is required: the template names no default storage for %s", what)
		case i < 0:
			p.Add(field, "%s is not a storage of %s", name, srv.Name)
		case node != "" && !slices.Contains(srv.Storages[i].Nodes, node):
			p.Add(field, "storage %s is not available on node %s", name, node)
		case !slices.Contains(srv.Storages[i].Content, content):
			p.Add(field, "storage %s does not accept %s content (%s)", name, content, what)
		}
	}
	content := "iso"
	if kind == horizon.ISOKindCloudImage {
		content = "import"
	}
	onNode("storage", storage, content, "the image")
	if kind != horizon.ISOKindCloudImage {
		return storage
	}
	onNode("version", spec.VM.Disk.Storage, "images", "the VM's disks (vm.disk.storage)")
	if n != nil && (n.SSHAddress == nil || n.SSHHostKey == nil) {
		p.Add("node", "has no SSH endpoint in Horizon (cloud-init snippets are uploaded over SFTP); an admin sets it on %s", srv.Name)
	}
	snippets := slices.ContainsFunc(srv.Storages, func(s horizon.ProxmoxStorage) bool {
		return slices.Contains(s.Content, "snippets") && slices.Contains(s.Nodes, node) && s.Path != "" &&
			(spec.CloudInit.SnippetStorage == "" || s.Name == spec.CloudInit.SnippetStorage)
	})
	if node != "" && !snippets {
		p.Add("node", "has no storage for cloud-init snippets (content snippets, a directory)")
	}
	return spec.VM.Disk.Storage
}

// defaultName names an ISO its request did not name.
func defaultName(t horizon.ISOTemplate, version int, node string) string {
	return fmt.Sprintf("%s v%d on %s", t.Name, version, node)
}
