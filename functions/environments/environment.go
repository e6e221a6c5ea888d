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
	Version     int64       `json:"version"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
}

func toEnvironment(e horizon.Environment) Environment {
	nets := e.NetworkIDs
	if nets == nil {
		nets = []uuid.UUID{}
	}
	return Environment{ID: e.ID, Name: e.Name, Description: e.Description, NetworkIDs: nets, Version: e.Version,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}

const maxDescription = 2000

// checkNetworks records a problem for each listed network that does not exist or repeats.
func checkNetworks(ctx context.Context, q store.Querier, p *horizon.Problems, ids []uuid.UUID) error {
	missing, err := store.NetworksMissing(ctx, q, ids)
	if err != nil {
		return err
	}
	api.CheckRefs(p, "network_ids", ids, missing, "a network")
	return nil
}
