package networks

import (
	"context"
	"net/netip"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/ipam"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// AddressRequest is the body of POST /v1/networks/{id}/addresses.
type AddressRequest struct {
	Name string `json:"name"`
	IP   string `json:"ip"`
}

// CreateAddress reserves a named address on a network (admin): the ip must be a host address of
// the network other than its gateway; name and ip are unique per network (409).
func CreateAddress(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		netID, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		req, err := api.Decode[AddressRequest](c)
		if err != nil {
			return err
		}
		ctx := c.UserContext()
		// The network is read outside a transaction: its CIDR and gateway never change, and a
		// network deleted meanwhile makes the insert fail on its foreign key (409).
		n, err := store.NetworkGet(ctx, d.DB, netID)
		if err != nil {
			return err
		}
		var p horizon.Problems
		horizon.CheckName(&p, "name", req.Name, horizon.MaxNameLength)
		ip, perr := netip.ParseAddr(req.IP)
		if perr != nil || ip.Zone() != "" {
			p.Add("ip", "must be an IP address")
		} else if msg := ipam.CheckAddress(ipam.Network{CIDR: n.CIDR, Gateway: n.Gateway}, ip); msg != "" {
			p.Add("ip", "%s", msg)
		}
		if err := p.Err(); err != nil {
			return err
		}
		who := api.Principal(c)
		a, err := store.AddressCreate(ctx, d.DB, horizon.Address{NetworkID: netID, Name: req.Name, IP: ip}, store.Activity{
			ActorID: &who.UserID, Action: "address.create", ObjectType: "address",
			Details: map[string]any{"network_id": netID, "name": req.Name, "ip": ip.String()}})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderLocation, "/v1/networks/"+netID.String()+"/addresses/"+a.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toAddress(a))
	}
}

// ListAddresses returns a network's addresses, optionally only ?state=free or attached.
func ListAddresses(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		netID, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		page, err := api.ParsePage(c)
		if err != nil {
			return err
		}
		var f store.AddressFilter
		switch c.Query("state") {
		case "":
		case "free":
			f.Attached = new(bool)
		case "attached":
			t := true
			f.Attached = &t
		default:
			return problem.Malformed("The query parameter state must be free or attached.")
		}
		ctx := c.UserContext()
		if _, err := store.NetworkGet(ctx, d.DB, netID); err != nil {
			return err
		}
		as, next, err := store.AddressList(ctx, d.DB, netID, f, page)
		if err != nil {
			return err
		}
		return c.JSON(api.NewList(api.Map(as, toAddress), next))
	}
}

// GetAddress returns one address of a network.
func GetAddress(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		netID, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		id, err := api.ParamID(c, "address_id")
		if err != nil {
			return err
		}
		a, err := store.AddressGet(c.UserContext(), d.DB, netID, id)
		if err != nil {
			return err
		}
		return c.JSON(toAddress(a))
	}
}

// DeleteAddress removes a free address (admin); an attached one is 409.
func DeleteAddress(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		netID, err := api.ParamID(c, "id")
		if err != nil {
			return err
		}
		id, err := api.ParamID(c, "address_id")
		if err != nil {
			return err
		}
		who := api.Principal(c)
		err = store.WithTx(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) error {
			if err := store.AddressDelete(ctx, tx, netID, id); err != nil {
				return err
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "address.delete", ObjectType: "address", ObjectID: &id})
		})
		if err != nil {
			if p := problem.From(err); p.Status == fiber.StatusConflict {
				return problem.Conflict("The address is attached to a stack execution; free it first.")
			}
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
	}
}
