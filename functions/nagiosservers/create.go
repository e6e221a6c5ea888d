package nagiosservers

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// Create registers a Nagios server (admin) after checking both sides: its CGIs answer with the
// username and password, and over SSH (host key pinned) the config directory can be created and
// the verify command passes. The URL is the CGI base, e.g. https://nagios.example.org/cgi-bin/nagios4;
// https is required unless the host is loopback.
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		srv, err := connect(ctx, d.Box, r.Body, bothSides)
		if err != nil {
			return err
		}
		n, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.NagiosServer, error) {
			n, err := store.NagiosServerCreate(ctx, tx, srv)
			if err != nil {
				return n, err
			}
			return n, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "nagios_server.create",
				ObjectType: "nagios_server", ObjectID: &n.ID, Details: map[string]any{"name": n.Name, "url": n.URL, "ssh_address": n.SSHAddress}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(n.Version))
		c.Set(fiber.HeaderLocation, "/v1/nagios-servers/"+n.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toNagiosServer(n))
	})
}
