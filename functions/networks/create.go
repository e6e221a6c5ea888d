package networks

import (
	"context"
	"regexp"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/ipam"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/networks.
type CreateRequest struct {
	Name    string   `json:"name"`
	CIDR    string   `json:"cidr"`
	Gateway string   `json:"gateway"`
	DNS     []string `json:"dns"`
	Bridge  string   `json:"bridge"`
	VLAN    *int     `json:"vlan"`
}

// bridgeName is what Linux and Proxmox accept as a bridge name (e.g. vmbr0).
var bridgeName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]{0,14}$`)

// Create adds a network (admin): a valid CIDR, a gateway inside it, DNS servers as IPs, a VLAN
// from 1 to 4094 when given, and a unique name (409).
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		var p horizon.Problems
		horizon.CheckName(&p, "name", r.Body.Name, horizon.MaxNameLength)
		parsed, problems := ipam.ParseNetwork(r.Body.CIDR, r.Body.Gateway, r.Body.DNS)
		for _, pr := range problems {
			p.Add(pr.Field, "%s", pr.Message)
		}
		if r.Body.Bridge == "" {
			p.Add("bridge", "is required (the Proxmox bridge, e.g. vmbr0)")
		} else if !bridgeName.MatchString(r.Body.Bridge) {
			p.Add("bridge", "must be a Linux bridge name like vmbr0")
		}
		if r.Body.VLAN != nil && (*r.Body.VLAN < 1 || *r.Body.VLAN > 4094) {
			p.Add("vlan", "must be from 1 to 4094")
		}
		if err := p.Err(); err != nil {
			return err
		}
		n, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Network, error) {
			n, err := store.NetworkCreate(ctx, tx, horizon.Network{Name: r.Body.Name, CIDR: parsed.CIDR, Gateway: parsed.Gateway,
				DNS: parsed.DNS, Bridge: r.Body.Bridge, VLAN: r.Body.VLAN})
			if err != nil {
				return n, err
			}
			return n, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "network.create",
				ObjectType: "network", ObjectID: &n.ID, Details: map[string]any{"name": n.Name, "cidr": n.CIDR.String()}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(n.Version))
		c.Set(fiber.HeaderLocation, "/v1/networks/"+n.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toNetwork(n))
	})
}
