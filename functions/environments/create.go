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
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		e, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Environment, error) {
			var p horizon.Problems
			horizon.CheckName(&p, "name", r.Body.Name, horizon.MaxNameLength)
			horizon.CheckText(&p, "description", r.Body.Description, maxDescription)
			if err := checkRefs(ctx, tx, &p, refs{networks: &r.Body.NetworkIDs, servers: &r.Body.ProxmoxServerIDs, nagios: r.Body.NagiosServerID}); err != nil {
				return horizon.Environment{}, err
			}
			if err := p.Err(); err != nil {
				return horizon.Environment{}, err
			}
			e, err := store.EnvironmentCreate(ctx, tx, horizon.Environment{Name: r.Body.Name, Description: r.Body.Description,
				NetworkIDs: r.Body.NetworkIDs, ProxmoxServerIDs: r.Body.ProxmoxServerIDs, NagiosServerID: r.Body.NagiosServerID})
			if err != nil {
				return e, err
			}
			return e, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "environment.create",
				ObjectType: "environment", ObjectID: &e.ID, Details: map[string]any{"name": e.Name}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(e.Version))
		c.Set(fiber.HeaderLocation, "/v1/environments/"+e.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toEnvironment(e))
	})
}
