package proxmoxservers

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/proxmox-servers.
type CreateRequest struct {
	Name           string        `json:"name"`
	APIURL         string        `json:"api_url"`
	TokenID        string        `json:"token_id"`
	TokenSecret    secrets.Value `json:"token_secret"`
	TLSFingerprint string        `json:"tls_fingerprint"`
	CACert         string        `json:"ca_cert"`
	SSHUser        string        `json:"ssh_user"`
	SSHPrivateKey  secrets.Value `json:"ssh_private_key"`
	Nodes          []NodeRequest `json:"nodes"`
}

// Create registers a cluster (admin) after checking it end to end; see the package doc.
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		if r.Body.SSHUser == "" {
			r.Body.SSHUser = "root"
		}
		srv, err := connect(ctx, d.Box, settings{Name: r.Body.Name, APIURL: r.Body.APIURL, TokenID: r.Body.TokenID,
			TokenSecret: r.Body.TokenSecret, TLSFingerprint: r.Body.TLSFingerprint, CACert: r.Body.CACert, SSHUser: r.Body.SSHUser,
			SSHPrivateKey: r.Body.SSHPrivateKey, Nodes: r.Body.Nodes})
		if err != nil {
			return err
		}
		srv, err = store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.ProxmoxServer, error) {
			s, err := store.ProxmoxServerCreate(ctx, tx, srv)
			if err != nil {
				return s, err
			}
			return s, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "proxmox_server.create",
				ObjectType: "proxmox_server", ObjectID: &s.ID, Details: map[string]any{"name": s.Name, "api_url": s.APIURL, "nodes": len(s.Nodes)}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(srv.Version))
		c.Set(fiber.HeaderLocation, "/v1/proxmox-servers/"+srv.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toServer(srv))
	})
}
