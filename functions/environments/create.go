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

// CreateRequest is the body of POST /v1/environments.
type CreateRequest struct {
	Name             string      `json:"name"`
	Description      string      `json:"description"`
	NetworkIDs       []uuid.UUID `json:"network_ids"`
	ProxmoxServerIDs []uuid.UUID `json:"proxmox_server_ids"`
	NagiosServerID   *uuid.UUID  `json:"nagios_server_id"`
}

// Create adds an environment (admin). A taken name is 409.
func Create(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		req, err := api.Decode[CreateRequest](c)
		if err != nil {
			return err
		}
		who := api.Principal(c)
		e, err := store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Environment, error) {
			var p horizon.Problems
			horizon.CheckName(&p, "name", req.Name, horizon.MaxNameLength)
			horizon.CheckText(&p, "description", req.Description, maxDescription)
			if err := checkRefs(ctx, tx, &p, refs{networks: &req.NetworkIDs, servers: &req.ProxmoxServerIDs, nagios: req.NagiosServerID}); err != nil {
				return horizon.Environment{}, err
			}
			if err := p.Err(); err != nil {
				return horizon.Environment{}, err
			}
			e, err := store.EnvironmentCreate(ctx, tx, horizon.Environment{Name: req.Name, Description: req.Description,
				NetworkIDs: req.NetworkIDs, ProxmoxServerIDs: req.ProxmoxServerIDs, NagiosServerID: req.NagiosServerID})
			if err != nil {
				return e, err
			}
			return e, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "environment.create",
				ObjectType: "environment", ObjectID: &e.ID, Details: map[string]any{"name": e.Name}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(e.Version))
		c.Set(fiber.HeaderLocation, "/v1/environments/"+e.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toEnvironment(e))
	}
}
