package stacks

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// ForceRemoveRequest is the body of POST /v1/stacks/{id}/force-remove.
type ForceRemoveRequest struct {
	api.Optional      // the body may be left out
	Confirm      bool `json:"confirm"`
}

// ForceRemoveResult answers a force-remove: what was (or, unconfirmed, would be) left behind.
type ForceRemoveResult struct {
	Confirmed bool            `json:"confirmed"`
	Manifest  AbandonManifest `json:"manifest"`
}

// AbandonManifest lists what a force-removed stack leaves in the world for an operator to
// clean up by hand: Horizon forgets it but destroys nothing.
type AbandonManifest struct {
	StackID     uuid.UUID          `json:"stack_id"`
	StackName   string             `json:"stack_name"`
	TeamID      uuid.UUID          `json:"team_id"`
	VMs         []AbandonedVM      `json:"vms"`
	Addresses   []AbandonedAddress `json:"addresses"`
	Workspaces  []string           `json:"workspaces"`
	NagiosHosts []string           `json:"nagios_hosts"`
	// ActionInstances are the terraform action instances left as they are (their workspaces
	// are in Workspaces too).
	ActionInstances []AbandonedInstance `json:"action_instances"`
}

// AbandonedInstance is a terraform action instance a force-remove leaves: what its module
// made stays, its state in its workspace.
type AbandonedInstance struct {
	ID              uuid.UUID `json:"id"`
	Action          string    `json:"action"`
	Number          int       `json:"number"`
	TemplateVersion int       `json:"template_version"`
	Workspace       string    `json:"workspace"`
}

// AbandonedVM is a VM a force-removed stack leaves running.
type AbandonedVM struct {
	Job             string     `json:"job"`
	Execution       int        `json:"execution"`
	Name            string     `json:"name"`
	ProxmoxServerID *uuid.UUID `json:"proxmox_server_id"`
	VMID            int        `json:"vm_id"`
	Node            string     `json:"node"`
	Pool            string     `json:"pool"`
	Tags            []string   `json:"tags"`
}

// AbandonedAddress is an address a force-remove frees although a VM may still use it.
type AbandonedAddress struct {
	ID        uuid.UUID `json:"id"`
	NetworkID uuid.UUID `json:"network_id"`
	Name      string    `json:"name"`
	IP        string    `json:"ip"`
}

const actionForceRemove = "stack.force_remove"

// ForceRemove (admins, failed stacks only) unlinks a stack Horizon cannot remove cleanly.
// Without confirm it lists every VM and address that would be released; with confirm it marks
// the stack removed without destroying anything, frees its addresses and VM ids, and records
// the list in the activity log (GET abandon-manifest downloads it).
func ForceRemove(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[ForceRemoveRequest]) error {
		var out ForceRemoveResult
		err := store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			l, err := load(ctx, tx, r.Who.Scope(), r.ID, true)
			if err != nil {
				return err
			}
			if err := notBusy(ctx, tx, l.stack); err != nil {
				return err
			}
			if l.stack.State != horizon.StackFailed {
				return problem.Conflict("The stack is %s: only a failed stack can be force-removed; remove it instead.", l.stack.State)
			}
			m, err := manifest(ctx, tx, l)
			if err != nil {
				return err
			}
			out = ForceRemoveResult{Confirmed: r.Body.Confirm, Manifest: m}
			if !r.Body.Confirm {
				return nil
			}
			for _, in := range m.ActionInstances {
				if err := store.ActionInstanceEnd(ctx, tx, in.ID, horizon.InstanceAbandoned); err != nil {
					return err
				}
			}
			for _, e := range l.execs {
				if err := store.AddressDetach(ctx, tx, e.ID); err != nil {
					return err
				}
				if err := store.VMIDRelease(ctx, tx, e.ID); err != nil {
					return err
				}
				if err := store.ExecutionSetState(ctx, tx, e.ID, horizon.ExecutionRemoved); err != nil {
					return err
				}
			}
			msg := "force-removed: its VMs, workspaces, action instances and Nagios hosts were left behind"
			if _, err := store.StackSetState(ctx, tx, horizon.StateChange{StackID: l.stack.ID, To: horizon.StackRemoved, ActorID: &r.Who.UserID,
				Error: &msg}); err != nil {
				return err
			}
			details, err := asDetails(m)
			if err != nil {
				return err
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: actionForceRemove, ObjectType: "stack",
				ObjectID: &l.stack.ID, TeamID: &l.stack.TeamID, Details: details})
		})
		if err != nil {
			return err
		}
		if r.Body.Confirm {
			d.Notify(ctx, events.Event{Type: events.Stack, ID: out.Manifest.StackID, StackID: out.Manifest.StackID, TeamID: out.Manifest.TeamID,
				State: string(horizon.StackRemoved)})
		}
		return c.JSON(out)
	})
}

// GetAbandonManifest (admins) downloads the manifest a confirmed force-remove recorded.
func GetAbandonManifest(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		if _, err := store.StackGet(ctx, d.DB, r.Who.Scope(), r.ID); err != nil {
			return err
		}
		details, _, err := store.ActivityLatest(ctx, d.DB, "stack", r.ID, actionForceRemove)
		if errors.Is(err, horizon.ErrNotFound) {
			return problem.NotFound("An abandon manifest of this stack (it was not force-removed)")
		}
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="abandon-`+r.ID.String()+`.json"`)
		return c.JSON(details)
	})
}

// manifest lists what the stack holds in the world.
func manifest(ctx context.Context, q store.Querier, l *loaded) (AbandonManifest, error) {
	m := AbandonManifest{StackID: l.stack.ID, StackName: l.stack.Name, TeamID: l.stack.TeamID, VMs: []AbandonedVM{},
		Addresses: []AbandonedAddress{}, Workspaces: []string{}, NagiosHosts: []string{}, ActionInstances: []AbandonedInstance{}}
	ins, err := store.ActionInstancesOfStack(ctx, q, l.stack.ID)
	if err != nil {
		return m, err
	}
	for _, in := range ins {
		ws := horizon.ActionInstanceWorkspace(l.stack.ID, in.Action, in.Number)
		m.ActionInstances = append(m.ActionInstances, AbandonedInstance{ID: in.ID, Action: in.Action, Number: in.Number,
			TemplateVersion: in.TemplateVersion, Workspace: ws})
		m.Workspaces = append(m.Workspaces, ws)
	}
	for _, e := range l.execs {
		name := e.MachineName(l.stack.Name)
		m.Workspaces = append(m.Workspaces, horizon.Workspace(l.stack.ID, e.Job, e.Index))
		if e.VMID != nil {
			node := e.Config.Node
			if e.Node != nil {
				node = *e.Node
			}
			m.VMs = append(m.VMs, AbandonedVM{Job: e.Job, Execution: e.Index, Name: name, ProxmoxServerID: e.ServerID, VMID: *e.VMID,
				Node: node, Pool: e.Config.Pool, Tags: horizon.VMTags(l.stack)})
		}
		if e.Config.AddressID != nil {
			a, err := store.AddressByID(ctx, q, *e.Config.AddressID)
			if errors.Is(err, horizon.ErrNotFound) {
				continue
			}
			if err != nil {
				return m, err
			}
			if a.ExecutionID != nil && *a.ExecutionID == e.ID {
				m.Addresses = append(m.Addresses, AbandonedAddress{ID: a.ID, NetworkID: a.NetworkID, Name: a.Name, IP: a.IP.String()})
			}
		}
	}
	// The Nagios hosts are those the stack's file lists now (what its last publish wrote).
	pub, err := store.NagiosPublicationGet(ctx, q, l.stack.ID)
	switch {
	case err == nil:
		m.NagiosHosts = append(m.NagiosHosts, pub.Hosts...)
	case !errors.Is(err, horizon.ErrNotFound):
		return m, err
	}
	return m, nil
}

// asDetails turns a value into an activity record's details.
func asDetails(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}
