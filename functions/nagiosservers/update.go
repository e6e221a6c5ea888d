package nagiosservers

import (
	"context"
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/store"
)

// UpdateRequest is the body of PATCH /v1/nagios-servers/{id}; absent fields are left as they
// are, and none may be null. A server registered without SSH access (before Horizon published to Nagios) gets it here.
type UpdateRequest struct {
	Name                  api.Field[string]        `json:"name"`
	URL                   api.Field[string]        `json:"url"`
	Username              api.Field[string]        `json:"username"`
	Password              api.Field[secrets.Value] `json:"password"`
	SSHAddress            api.Field[string]        `json:"ssh_address"`
	SSHUser               api.Field[string]        `json:"ssh_user"`
	SSHPrivateKey         api.Field[secrets.Value] `json:"ssh_private_key"`
	SSHHostKeyFingerprint api.Field[string]        `json:"ssh_host_key_fingerprint"`
	ConfigDir             api.Field[string]        `json:"config_dir"`
	VerifyCommand         api.Field[string]        `json:"verify_command"`
	ReloadCommand         api.Field[string]        `json:"reload_command"`
}

// Update changes a server (admin), honouring If-Match. The registration checks of the side a
// change touches run again — the CGIs (and a new discovery) when url, username or password
// change; SSH, the config directory and the verify and reload commands when any SSH-side field
// changes — outside any transaction; nothing is saved when one fails (422 naming the field), and
// the write applies only if the server did not change meanwhile.
func Update(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[UpdateRequest]) error {
		cur, err := store.NagiosServerGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		if r.IfVersion == 0 {
			r.IfVersion = cur.Version
		}
		next, err := stored(d.Box, cur)
		if err != nil {
			return err
		}
		var which sides
		b := r.Body
		which.cgi = slices.Contains([]bool{b.URL.Apply(&next.URL), b.Username.Apply(&next.Username), b.Password.Apply(&next.Password)}, true)
		which.ssh = slices.Contains([]bool{b.SSHAddress.Apply(&next.SSHAddress), b.SSHUser.Apply(&next.SSHUser),
			b.SSHPrivateKey.Apply(&next.SSHPrivateKey), b.SSHHostKeyFingerprint.Apply(&next.SSHHostKeyFingerprint),
			b.ConfigDir.Apply(&next.ConfigDir), b.VerifyCommand.Apply(&next.VerifyCommand), b.ReloadCommand.Apply(&next.ReloadCommand)}, true)
		b.Name.Apply(&next.Name)
		srv, err := connect(ctx, d.Box, next, which)
		if err != nil {
			return err
		}
		srv.ID = cur.ID
		if !which.ssh {
			srv.SSHPrivateKey = cur.SSHPrivateKey // unchanged: kept sealed as it is (nil when never given)
		}
		n, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.NagiosServer, error) {
			n, err := store.NagiosServerUpdate(ctx, tx, srv, r.IfVersion, which.cgi)
			if err != nil {
				return n, err
			}
			return n, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "nagios_server.update",
				ObjectType: "nagios_server", ObjectID: &n.ID, Details: map[string]any{"name": n.Name, "url": n.URL, "ssh_address": n.SSHAddress,
					"checked_cgi": which.cgi, "checked_ssh": which.ssh}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(n.Version))
		return c.JSON(toNagiosServer(n))
	})
}

// stored returns a stored server's settings as a registration request, its secrets opened (the
// private key empty when none was ever given).
func stored(box *secrets.Box, n horizon.NagiosServer) (CreateRequest, error) {
	pw, err := box.OpenString(horizon.PurposeNagiosPassword, n.Password)
	if err != nil {
		return CreateRequest{}, err
	}
	var key secrets.Value
	if n.SSHPrivateKey != nil {
		if key, err = box.OpenString(horizon.PurposeNagiosSSHPrivateKey, n.SSHPrivateKey); err != nil {
			return CreateRequest{}, err
		}
	}
	return CreateRequest{Name: n.Name, URL: n.URL, Username: n.Username, Password: pw, SSHAddress: n.SSHAddress, SSHUser: n.SSHUser,
		SSHPrivateKey: key, SSHHostKeyFingerprint: n.SSHHostKey, ConfigDir: n.ConfigDir, VerifyCommand: n.VerifyCommand,
		ReloadCommand: n.ReloadCommand}, nil
}
