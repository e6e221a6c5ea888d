package isos

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gofiber/fiber/v2"
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

// startBuild writes a build run of the ISO with one step per stage (sel narrows them) and moves
// the ISO to building.
func startBuild(ctx context.Context, tx pgx.Tx, iso horizon.ISO, spec *isotemplate.Spec, sel isotemplate.Selection, who auth.Principal) (horizon.Run, error) {
	return startRun(ctx, tx, iso, horizon.RunISOBuild, isotemplate.Steps(spec, iso.Kind, sel, iso), horizon.ISOBuilding, who)
}

// startRemoval writes a removal run of the ISO (one step, through the node's gate) and moves
// the ISO to removing.
func startRemoval(ctx context.Context, tx pgx.Tx, iso horizon.ISO, who auth.Principal) (horizon.Run, error) {
	step := horizon.Step{Phase: 0, PhaseName: "remove", Job: "remove", Kind: horizon.StepISORemove, ServerID: &iso.ServerID, Node: &iso.Node}
	return startRun(ctx, tx, iso, horizon.RunISORemove, []horizon.Step{step}, horizon.ISORemoving, who)
}

func startRun(ctx context.Context, tx pgx.Tx, iso horizon.ISO, kind horizon.RunKind, steps []horizon.Step, to horizon.ISOState, who auth.Principal) (horizon.Run, error) {
	run, _, err := store.RunInsertWithSteps(ctx, tx, horizon.Run{ISOID: &iso.ID, Kind: kind, ActorID: &who.UserID}, steps)
	if errors.Is(err, store.ErrRunInProgress) {
		return run, problem.Busy("Another run of this ISO started a moment ago; wait for it or cancel it.")
	}
	if err != nil {
		return run, err
	}
	if iso.State == to {
		// A new ISO is inserted building: record where it came from (nothing) and why.
		err = store.ISOStateRecord(ctx, tx, horizon.ISOStateChange{ISOID: iso.ID, RunID: &run.ID, To: to, ActorID: &who.UserID})
	} else {
		_, err = store.ISOSetState(ctx, tx, horizon.ISOStateChange{ISOID: iso.ID, RunID: &run.ID, To: to, ActorID: &who.UserID})
	}
	if err != nil {
		return run, err
	}
	return run, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "iso." + string(kind), ObjectType: "iso",
		ObjectID: &iso.ID, Details: map[string]any{"run_id": run.ID, "steps": len(steps)}})
}

// notBusy answers 409 naming the ISO's run in progress, if any.
func notBusy(ctx context.Context, q store.Querier, iso horizon.ISO) error {
	run, err := store.RunActive(ctx, q, store.OfISO(iso.ID))
	if errors.Is(err, horizon.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return problem.Busy("Run %s (%s) is in progress on this ISO; wait for it or cancel it.", run.ID, run.Kind)
}

// accepted announces the new run, enqueues its first advance (after the commit; a lost
// enqueue is found by the reconciler) and answers 202 with body.
func accepted(c *fiber.Ctx, d api.Deps, iso horizon.ISO, run horizon.Run, body any) error {
	ctx := c.UserContext()
	d.Announce().Changed(ctx, run.ID,
		events.Event{Type: events.ISO, ID: iso.ID, State: string(iso.State)},
		events.Event{Type: events.Run, ID: run.ID, ISOID: iso.ID, RunID: run.ID, State: string(run.State)})
	c.Set(fiber.HeaderLocation, "/v1/isos/"+iso.ID.String())
	return c.Status(fiber.StatusAccepted).JSON(body)
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
