package nagiosservers

import (
	"context"
	"net/url"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/nagios-servers.
type CreateRequest struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// Create registers a Nagios server (admin). The URL is the CGI base, e.g.
// https://nagios.example.org/cgi-bin/nagios4; https is required unless the host is loopback.
func Create(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := api.RequireAdmin(c); err != nil {
			return err
		}
		req, err := api.Decode[CreateRequest](c)
		if err != nil {
			return err
		}
		var p horizon.Problems
		horizon.CheckName(&p, "name", req.Name, horizon.MaxNameLength)
		checkURL(&p, "url", req.URL)
		horizon.CheckName(&p, "username", req.Username, horizon.MaxNameLength)
		if req.Password == "" {
			p.Add("password", "is required")
		} else if len(req.Password) > 1024 {
			p.Add("password", "must be at most 1024 bytes")
		}
		if err := p.Err(); err != nil {
			return err
		}
		who := api.Principal(c)
		n, err := store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.NagiosServer, error) {
			n, err := store.NagiosServerCreate(ctx, tx, horizon.NagiosServer{Name: req.Name, URL: req.URL, Username: req.Username,
				Password: d.Box.SealString(horizon.PurposeNagiosPassword, req.Password)})
			if err != nil {
				return n, err
			}
			return n, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &who.UserID, Action: "nagios_server.create",
				ObjectType: "nagios_server", ObjectID: &n.ID, Details: map[string]any{"name": n.Name, "url": n.URL}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, api.ETag(n.Version))
		c.Set(fiber.HeaderLocation, "/v1/nagios-servers/"+n.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toNagiosServer(n))
	}
}

func checkURL(p *horizon.Problems, field, s string) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
		p.Add(field, "must be an http(s) URL without credentials, e.g. https://nagios.example.org/cgi-bin/nagios4")
		return
	}
	if u.Scheme == "http" && u.Hostname() != "localhost" && u.Hostname() != "127.0.0.1" && u.Hostname() != "::1" {
		p.Add(field, "must use https (the password travels with every request)")
	}
}
