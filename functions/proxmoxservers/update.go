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

// UpdateRequest is the body of PATCH /v1/proxmox-servers/{id}; absent fields are left as they
// are, and none may be null. Nodes lists the nodes whose SSH settings change (e.g. a re-pinned
// host key).
type UpdateRequest struct {
	Name           api.Field[string]        `json:"name"`
	APIURL         api.Field[string]        `json:"api_url"`
	TokenID        api.Field[string]        `json:"token_id"`
	TokenSecret    api.Field[secrets.Value] `json:"token_secret"`
	TLSFingerprint api.Field[string]        `json:"tls_fingerprint"`
	CACert         api.Field[string]        `json:"ca_cert"`
	SSHUser        api.Field[string]        `json:"ssh_user"`
	SSHPrivateKey  api.Field[secrets.Value] `json:"ssh_private_key"`
	Nodes          []NodeRequest            `json:"nodes"`
}

// Update changes a server (admin) and checks the result end to end like Create, honouring
// If-Match. The network checks run outside any transaction; the write then applies only if the
// server did not change meanwhile.
func Update(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[UpdateRequest]) error {
		cur, err := store.ProxmoxServerGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		if r.IfVersion == 0 {
			r.IfVersion = cur.Version
		}
		s, err := stored(d, cur)
		if err != nil {
			return err
		}
		r.Body.Name.Apply(&s.Name)
		r.Body.APIURL.Apply(&s.APIURL)
		r.Body.TokenID.Apply(&s.TokenID)
		r.Body.TokenSecret.Apply(&s.TokenSecret)
		r.Body.TLSFingerprint.Apply(&s.TLSFingerprint)
		r.Body.CACert.Apply(&s.CACert)
		r.Body.SSHUser.Apply(&s.SSHUser)
		r.Body.SSHPrivateKey.Apply(&s.SSHPrivateKey)
		s.Nodes = r.Body.Nodes
		return save(c, d, cur, s, r.IfVersion, "proxmox_server.update")
	})
}

// stored returns a stored server's settings with its secrets opened.
func stored(d api.Deps, cur horizon.ProxmoxServer) (settings, error) {
	token, err := d.Box.OpenString(horizon.PurposeProxmoxTokenSecret, cur.TokenSecret)
	if err != nil {
		return settings{}, err
	}
	key, err := d.Box.OpenString(horizon.PurposeProxmoxSSHPrivateKey, cur.SSHPrivateKey)
	if err != nil {
		return settings{}, err
	}
	return settings{Name: cur.Name, APIURL: cur.APIURL, TokenID: cur.TokenID, TokenSecret: token, TLSFingerprint: cur.TLSFingerprint,
		CACert: cur.CACert, SSHUser: cur.SSHUser, SSHPrivateKey: key, Known: cur.Nodes}, nil
}

// save checks s against the cluster and stores it over cur if cur's version is still ifVersion.
func save(c *fiber.Ctx, d api.Deps, cur horizon.ProxmoxServer, s settings, ifVersion int64, action string) error {
	srv, err := connect(c.UserContext(), d.Box, s)
	if err != nil {
		return err
	}
	srv.ID = cur.ID
	who := api.Principal(c)
	srv, err = store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.ProxmoxServer, error) {
		out, err := store.ProxmoxServerUpdate(ctx, tx, srv, ifVersion)
		if err != nil {
			return out, err
		}
		return out, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: action,
			ObjectType: "proxmox_server", ObjectID: &out.ID, Details: map[string]any{"name": out.Name, "nodes": len(out.Nodes)}})
	})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, api.ETag(srv.Version))
	return c.JSON(toServer(srv))
}
