package proxmoxservers

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Refresh re-discovers a server's inventory (admin): nodes and their state, storages, pools and
// ISO files. SSH settings of nodes are kept; new nodes appear without them.
func Refresh(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		cur, err := store.ProxmoxServerGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		s, err := stored(d, cur)
		if err != nil {
			return err
		}
		return save(c, d, cur, s, cur.Version, "proxmox_server.refresh")
	})
}
