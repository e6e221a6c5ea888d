package isos

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// List returns ISOs (removed ones only with ?state=removed), filtered by ?state=,
// ?proxmox_server_id= and ?iso_template_id=. With ?proxmox_server_id= and ?available_on=<node>
// it lists the built ISOs a machine on that node may use: same cluster, and built on a shared
// storage or on that node.
func List(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		server, err := api.QueryID(c, "proxmox_server_id")
		if err != nil {
			return err
		}
		tmpl, err := api.QueryID(c, "iso_template_id")
		if err != nil {
			return err
		}
		state := horizon.ISOState(c.Query("state"))
		switch state {
		case "", horizon.ISOBuilding, horizon.ISOBuilt, horizon.ISOFailed, horizon.ISORemoving, horizon.ISORemoved:
		default:
			return problem.Malformed("The query parameter state must be building, built, failed, removing or removed.")
		}
		node := c.Query("available_on")
		if node != "" && server == nil {
			return problem.Malformed("The query parameter available_on needs proxmox_server_id: node names are unique per cluster only.")
		}
		isos, next, err := store.ISOList(ctx, d.DB, store.ISOFilter{State: state, ServerID: server, TemplateID: tmpl, AvailableOn: node}, page)
		if err != nil {
			return err
		}
		storages := map[uuid.UUID][]horizon.ProxmoxStorage{}
		out := make([]ISO, len(isos))
		for i, iso := range isos {
			if _, ok := storages[iso.ServerID]; !ok {
				srv, err := store.ProxmoxServerGet(ctx, d.DB, iso.ServerID)
				if err != nil {
					return err
				}
				storages[iso.ServerID] = srv.Storages
			}
			out[i] = toISO(iso, storages[iso.ServerID])
		}
		return c.JSON(api.NewList(out, next))
	})
}
