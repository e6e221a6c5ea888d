// Package startup serves GET /v1/startup: every VM of every stack the caller may see, in the
// order they boot when a host restarts (startup order ascending, machines without one last),
// with the state Proxmox reports for each right now.
package startup

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"horizon/functions/api"
	"horizon/shared/proxmox"
	"horizon/shared/store"
)

// Machine is one VM in the boot order.
type Machine struct {
	Order         *int      `json:"startup_order"`
	StackID       uuid.UUID `json:"stack_id"`
	Stack         string    `json:"stack"`
	EnvironmentID uuid.UUID `json:"environment_id"`
	Job           string    `json:"job"`
	Execution     int       `json:"execution"`
	Node          string    `json:"node"`
	VMID          int       `json:"vm_id"`
	// State is what Proxmox reports (running, stopped …), or "unknown" when its cluster did not
	// answer.
	State string `json:"state"`
}

// askTimeout bounds the questions to the clusters.
const askTimeout = 10 * time.Second

// List returns the machines in boot order.
func List(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		ms, err := store.MachinesInStartupOrder(ctx, d.DB, r.Who.Scope())
		if err != nil {
			return err
		}
		states := vmStates(ctx, d, ms)
		out := make([]Machine, len(ms))
		for i, m := range ms {
			state := "unknown"
			if s, ok := states[m.ServerID][m.VMID]; ok {
				state = s
			}
			out[i] = Machine{Order: m.StartupOrder, StackID: m.StackID, Stack: m.StackName, EnvironmentID: m.EnvironmentID, Job: m.Job,
				Execution: m.Index, Node: m.Node, VMID: m.VMID, State: state}
		}
		return c.JSON(fiber.Map{"items": out})
	})
}

// vmStates asks each cluster the machines are on for its VMs' states, in parallel.
func vmStates(ctx context.Context, d api.Deps, ms []store.Machine) map[uuid.UUID]map[int]string {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	out := map[uuid.UUID]map[int]string{}
	for _, m := range ms {
		out[m.ServerID] = nil
	}
	results := make(map[uuid.UUID]map[int]string, len(out))
	var g errgroup.Group
	type answer struct {
		id     uuid.UUID
		states map[int]string
	}
	answers := make(chan answer, len(out))
	for id := range out {
		g.Go(func() error {
			answers <- answer{id, askCluster(ctx, d, id)}
			return nil
		})
	}
	_ = g.Wait() // each cluster's failure is an empty answer
	close(answers)
	for a := range answers {
		results[a.id] = a.states
	}
	return results
}

func askCluster(ctx context.Context, d api.Deps, id uuid.UUID) map[int]string {
	srv, err := store.ProxmoxServerGet(ctx, d.DB, id)
	if err != nil {
		return nil
	}
	client, err := proxmox.ForServer(d.Box, srv, askTimeout)
	if err != nil {
		return nil
	}
	var vms []struct {
		VMID   int    `json:"vmid"`
		Status string `json:"status"`
	}
	if err := client.Get(ctx, "/cluster/resources?type=vm", &vms); err != nil {
		d.Log.WarnContext(ctx, "startup order: cluster did not answer", "proxmox_server", srv.Name, "error", err)
		return nil
	}
	states := make(map[int]string, len(vms))
	for _, vm := range vms {
		states[vm.VMID] = vm.Status
	}
	return states
}
