package proxmoxservers

import (
	"github.com/gofiber/fiber/v2"

	"horizon/functions/api"
	"horizon/shared/store"
)

// Refresh re-discovers a server's inventory (admin): nodes and their state, storages, pools and
// ISO files. SSH settings of nodes are kept; new nodes appear without them.
func Refresh(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		id, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		cur, err := store.ProxmoxServerGet(c.UserContext(), d.DB, id)
		if err != nil {
			return err
		}
		s, err := stored(d, cur)
		if err != nil {
			return err
		}
		return save(c, d, cur, s, cur.Version, "proxmox_server.refresh")
	}
}
