// Package environments serves /v1/environments: where stacks may run. Admins write; every
// authenticated user reads.
package environments

import (
	"context"
	"time"

	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// Environment is an environment as the API shows it.
type Environment struct {
	ID          uuid.UUID   `json:"id"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	NetworkIDs  []uuid.UUID `json:"network_ids"`
	// ProxmoxServerIDs are the clusters the environment's stacks may be built on.
	ProxmoxServerIDs []uuid.UUID `json:"proxmox_server_ids"`
	NagiosServerID   *uuid.UUID  `json:"nagios_server_id"`
	Version          int64       `json:"version"`
	CreatedAt        time.Time   `json:"created_at"`
	UpdatedAt        time.Time   `json:"updated_at"`
}

func toEnvironment(e horizon.Environment) Environment {
	return Environment{ID: e.ID, Name: e.Name, Description: e.Description, NetworkIDs: nonNil(e.NetworkIDs),
		ProxmoxServerIDs: nonNil(e.ProxmoxServerIDs), NagiosServerID: e.NagiosServerID, Version: e.Version,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}

const maxDescription = 2000

func nonNil(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}

// refs are the catalogue objects an environment names.
type refs struct {
	networks, servers *[]uuid.UUID
	nagios            *uuid.UUID
}

// checkRefs records a problem for each named network, Proxmox server or Nagios server that does
// not exist or repeats.
func checkRefs(ctx context.Context, q store.Querier, p *horizon.Problems, r refs) error {
	if r.networks != nil {
		missing, err := store.NetworksMissing(ctx, q, *r.networks)
		if err != nil {
			return err
		}
		api.CheckRefs(p, "network_ids", *r.networks, missing, "a network")
	}
	if r.servers != nil {
		missing, err := store.ProxmoxServersMissing(ctx, q, *r.servers)
		if err != nil {
			return err
		}
		api.CheckRefs(p, "proxmox_server_ids", *r.servers, missing, "a Proxmox server")
	}
	if r.nagios != nil {
		missing, err := store.NagiosServersMissing(ctx, q, []uuid.UUID{*r.nagios})
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			p.Add("nagios_server_id", "is not a Nagios server")
		}
	}
	return nil
}
