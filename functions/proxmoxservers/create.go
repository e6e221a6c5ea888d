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
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		req, err := api.Decode[CreateRequest](c)
		if err != nil {
			return err
		}
		if req.SSHUser == "" {
			req.SSHUser = "root"
		}
		srv, err := connect(c.UserContext(), d.Box, settings{Name: req.Name, APIURL: req.APIURL, TokenID: req.TokenID,
			TokenSecret: req.TokenSecret, TLSFingerprint: req.TLSFingerprint, CACert: req.CACert, SSHUser: req.SSHUser,
			SSHPrivateKey: req.SSHPrivateKey, Nodes: req.Nodes})
		if err != nil {
			return err
		}
		who := api.Principal(c)
		srv, err = store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.ProxmoxServer, error) {
			s, err := store.ProxmoxServerCreate(ctx, tx, srv)
			if err != nil {
				return s, err
			}
			return s, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "proxmox_server.create",
				ObjectType: "proxmox_server", ObjectID: &s.ID, Details: map[string]any{"name": s.Name, "api_url": s.APIURL, "nodes": len(s.Nodes)}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(srv.Version))
		c.Set(fiber.HeaderLocation, "/v1/proxmox-servers/"+srv.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toServer(srv))
	}
}
