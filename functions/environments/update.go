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
type UpdateRequest struct {
	Name             *string                 `json:"name"`
	Description      *string                 `json:"description"`
	NetworkIDs       *[]uuid.UUID            `json:"network_ids"`
	ProxmoxServerIDs *[]uuid.UUID            `json:"proxmox_server_ids"`
	NagiosServerID   api.Nullable[uuid.UUID] `json:"nagios_server_id"`
}

// Update changes an environment (admin), honouring If-Match.
func Update(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		ifVersion, err := api.IfMatch(c)
		if err != nil {
			return err
		}
		req, err := api.Decode[UpdateRequest](c)
		if err != nil {
			return err
		}
		who := api.Principal(c)
		e, err := store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Environment, error) {
			var p horizon.Problems
			if req.Name != nil {
				horizon.CheckName(&p, "name", *req.Name, horizon.MaxNameLength)
			}
			if req.Description != nil {
				horizon.CheckText(&p, "description", *req.Description, maxDescription)
			}
			if err := checkRefs(ctx, tx, &p, refs{networks: req.NetworkIDs, servers: req.ProxmoxServerIDs, nagios: req.NagiosServerID.Value}); err != nil {
				return horizon.Environment{}, err
			}
			if err := p.Err(); err != nil {
				return horizon.Environment{}, err
			}
			patch := store.EnvironmentPatch{Name: req.Name, Description: req.Description, NetworkIDs: req.NetworkIDs, ProxmoxServerIDs: req.ProxmoxServerIDs}
			if req.NagiosServerID.Set {
				patch.NagiosServerID = &req.NagiosServerID.Value
			}
			e, err := store.EnvironmentUpdate(ctx, tx, id, patch, ifVersion)
			if err != nil {
				return e, err
			}
			return e, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "environment.update",
				ObjectType: "environment", ObjectID: &e.ID, Details: map[string]any{"name": e.Name, "network_ids": e.NetworkIDs}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(e.Version))
		return c.JSON(toEnvironment(e))
	}
}
