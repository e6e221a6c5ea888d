package networks

import (
	"context"
	"net/netip"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
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
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[AddressRequest]) error {
		// The network is read outside a transaction: its CIDR and gateway never change, and a
		// network deleted meanwhile makes the insert fail on its foreign key (409).
		n, err := store.NetworkGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		var p horizon.Problems
		horizon.CheckName(&p, "name", r.Body.Name, horizon.MaxNameLength)
		ip, perr := netip.ParseAddr(r.Body.IP)
		if perr != nil || ip.Zone() != "" {
			p.Add("ip", "must be an IP address")
		} else if msg := ipam.CheckAddress(ipam.Network{CIDR: n.CIDR, Gateway: n.Gateway}, ip); msg != "" {
			p.Add("ip", "%s", msg)
		}
		if err := p.Err(); err != nil {
			return err
		}
		a, err := store.AddressCreate(ctx, d.DB, horizon.Address{NetworkID: r.ID, Name: r.Body.Name, IP: ip}, store.Activity{
			ActorID: &r.Who.UserID, Action: "address.create", ObjectType: "address",
			Details: map[string]any{"network_id": r.ID, "name": r.Body.Name, "ip": ip.String()}})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderLocation, "/v1/networks/"+r.ID.String()+"/addresses/"+a.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toAddress(a))
	})
}

// ListAddresses returns a network's addresses, optionally only ?state=free or attached; an
// attached one names its stack when the caller may see that stack.
func ListAddresses(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
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
		if _, err := store.NetworkGet(ctx, d.DB, r.ID); err != nil {
			return err
		}
		as, next, err := store.AddressList(ctx, d.DB, r.ID, f, page)
		if err != nil {
			return err
		}
		var held []uuid.UUID
		for _, a := range as {
			if a.ExecutionID != nil {
				held = append(held, *a.ExecutionID)
			}
		}
		stacks, err := store.AddressStacks(ctx, d.DB, r.Who.Scope(), held)
		if err != nil {
			return err
		}
		out := api.Map(as, toAddress)
		for i := range out {
			if e := out[i].ExecutionID; e != nil {
				if r, ok := stacks[*e]; ok {
					out[i].Stack = &AddressStack{ID: r.ID, Name: r.Name}
				}
			}
		}
		return c.JSON(api.NewList(out, next))
	})
}

// GetAddress returns one address of a network.
func GetAddress(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		a, err := store.AddressGet(ctx, d.DB, r.ID, r.Sub)
		if err != nil {
			return err
		}
		return c.JSON(toAddress(a))
	})
}

// DeleteAddress removes a free address (admin); an attached one is 409.
func DeleteAddress(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		err := store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			if err := store.AddressDelete(ctx, tx, r.ID, r.Sub); err != nil {
				return api.InUse(err, "This address", "free it first (edit or remove that stack).")
			}
			return store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "address.delete", ObjectType: "address", ObjectID: &r.Sub})
		})
		if err != nil {
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
	})
}

// RangeRequest is the body of POST /v1/networks/{id}/address-ranges: every address from first
// to last, inclusive, named name_prefix followed by the address's last number (its last octet
// for IPv4, e.g. vm-10, vm-11; its last 16 bits in hex for IPv6).
type RangeRequest struct {
	NamePrefix string `json:"name_prefix"`
	First      string `json:"first"`
	Last       string `json:"last"`
}

// MaxRange bounds the addresses one range request reserves.
const MaxRange = 256

// CreateRange reserves a range of named addresses on a network at once (admin), all or
// nothing: an address outside the network, its gateway, or a name or ip already taken (409)
// refuses the whole range.
func CreateRange(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[RangeRequest]) error {
		n, err := store.NetworkGet(ctx, d.DB, r.ID)
		if err != nil {
			return err
		}
		net := ipam.Network{CIDR: n.CIDR, Gateway: n.Gateway}
		var p horizon.Problems
		// The longest name is the prefix and up to 4 more characters.
		horizon.CheckName(&p, "name_prefix", r.Body.NamePrefix+"0000", horizon.MaxNameLength)
		parse := func(field, s string) netip.Addr {
			ip, err := netip.ParseAddr(s)
			if err != nil || ip.Zone() != "" {
				p.Add(field, "must be an IP address")
				return netip.Addr{}
			}
			if !n.CIDR.Contains(ip) {
				p.Add(field, "is outside %s", n.CIDR)
				return netip.Addr{}
			}
			return ip
		}
		first, last := parse("first", r.Body.First), parse("last", r.Body.Last)
		var ips []netip.Addr
		if first.IsValid() && last.IsValid() {
			if last.Less(first) {
				p.Add("last", "comes before first")
			}
			for ip := first; ip.IsValid() && !last.Less(ip) && len(ips) <= MaxRange; ip = ip.Next() {
				ips = append(ips, ip)
			}
			if len(ips) > MaxRange {
				p.Add("last", "makes more than %d addresses: reserve them in several ranges", MaxRange)
			}
			for _, ip := range ips {
				if msg := ipam.CheckAddress(net, ip); msg != "" && len(ips) <= MaxRange {
					p.Add("first", "%s %s: the range must hold host addresses only", ip, msg)
					break
				}
			}
		}
		if err := p.Err(); err != nil {
			return err
		}
		created := make([]horizon.Address, 0, len(ips))
		err = store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			for _, ip := range ips {
				name := r.Body.NamePrefix + lastNumber(ip)
				a, err := store.AddressCreate(ctx, tx, horizon.Address{NetworkID: r.ID, Name: name, IP: ip}, store.Activity{
					ActorID: &r.Who.UserID, Action: "address.create", ObjectType: "address",
					Details: map[string]any{"network_id": r.ID, "name": name, "ip": ip.String()}})
				if err != nil {
					return err
				}
				created = append(created, a)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return c.Status(fiber.StatusCreated).JSON(fiber.Map{"items": api.Map(created, toAddress)})
	})
}

// lastNumber is what tells an address from its neighbours: its last octet (IPv4) or its last
// 16 bits in hex (IPv6).
func lastNumber(ip netip.Addr) string {
	b := ip.AsSlice()
	if ip.Is4() {
		return strconv.Itoa(int(b[3]))
	}
	return strconv.FormatUint(uint64(b[len(b)-2])<<8|uint64(b[len(b)-1]), 16)
}
