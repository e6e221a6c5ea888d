package environments

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// UpdateRequest is the body of PATCH /v1/environments/{id}; absent fields are left as they are.
// Only NagiosServerID may be null, which unsets it.
type UpdateRequest struct {
	Name             api.Field[string]      `json:"name"`
	Description      api.Field[string]      `json:"description"`
	NetworkIDs       api.Field[[]uuid.UUID] `json:"network_ids"`
	ProxmoxServerIDs api.Field[[]uuid.UUID] `json:"proxmox_server_ids"`
	NagiosServerID   api.Field[*uuid.UUID]  `json:"nagios_server_id"`
}

// Update changes an environment (admin), honouring If-Match.
func Update(d api.Deps) fiber.Handler {
	return api.Edit(d, func(ctx context.Context, tx pgx.Tx, r api.Req[UpdateRequest]) (api.Object, error) {
		req := r.Body
		var p horizon.Problems
		if req.Name.Given() {
			horizon.CheckName(&p, "name", req.Name.Value(), horizon.MaxNameLength)
		}
		if req.Description.Given() {
			horizon.CheckText(&p, "description", req.Description.Value(), maxDescription)
		}
		if err := checkRefs(ctx, tx, &p, refs{networks: req.NetworkIDs.Ptr(), servers: req.ProxmoxServerIDs.Ptr(), nagios: req.NagiosServerID.Value()}); err != nil {
			return api.Object{}, err
		}
		if err := p.Err(); err != nil {
			return api.Object{}, err
		}
		patch := store.EnvironmentPatch{Name: req.Name.Ptr(), Description: req.Description.Ptr(), NetworkIDs: req.NetworkIDs.Ptr(),
			ProxmoxServerIDs: req.ProxmoxServerIDs.Ptr(), NagiosServerID: req.NagiosServerID.Ptr()}
		env, err := store.EnvironmentUpdate(ctx, tx, r.ID, patch, r.IfVersion)
		if err != nil {
			return api.Object{}, err
		}
		return api.Object{View: toEnvironment(env), Version: env.Version}, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID,
			Action: "environment.update", ObjectType: "environment", ObjectID: &env.ID, Details: map[string]any{"name": env.Name, "network_ids": env.NetworkIDs}})
	})
}
