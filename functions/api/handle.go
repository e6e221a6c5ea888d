package api

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// Role is the least a principal must be to call a route. Each row of the route table
// (functions/app/routes.go) declares one beside its token scope, and Require enforces it
// before the handler runs; a handler checks only what depends on the object (another user's
// key, another team's stack).
type Role uint8

const (
	// SignedIn opens a route to every principal; what it shows is narrowed by the store's
	// scope (a member sees their teams' stacks).
	SignedIn Role = iota
	// Member opens a route to members and admins: viewers have read-only access.
	Member
	// Admin opens a route to admins only: the catalogue, users, teams.
	Admin
)

// String names the role as the route table and the tests do.
func (r Role) String() string {
	switch r {
	case Member:
		return "member"
	case Admin:
		return "admin"
	}
	return "signed-in"
}

// Allows reports whether p has at least role r.
func (r Role) Allows(p auth.Principal) bool {
	switch r {
	case Member:
		return p.CanWrite()
	case Admin:
		return p.IsAdmin()
	}
	return true
}

// Require is the middleware of a route row declaring role r: it answers 403 to a principal r
// does not allow. It runs after the scope check and before the idempotency key is taken, so
// that a refusal leaves no recorded answer behind.
func Require(r Role) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if r.Allows(Principal(c)) {
			return c.Next()
		}
		if r == Admin {
			return problem.Forbidden("Only admins may do this.")
		}
		return problem.Forbidden("Viewers have read-only access.")
	}
}

// None is the body type of a route that reads no body: Handle leaves the body alone.
type None struct{}

// Optional, embedded in a request type, lets the client leave the body out: an empty body is
// the zero request. A body that is sent is decoded as strictly as any other.
type Optional struct{}

func (Optional) bodyOptional() {}

// Req is one request as a handler's decision sees it: the principal, the object ids of the
// path parsed, If-Match read and the body decoded.
type Req[B any] struct {
	Who auth.Principal
	// ID is the path's {id}; uuid.Nil on a route without one.
	ID uuid.UUID
	// Sub is the id of the object inside {id}'s that the path names — an address, a run, an
	// action instance, a drift finding, a delivery —; uuid.Nil on a route without one.
	Sub uuid.UUID
	// IfVersion is the version If-Match names, 0 when the header is absent or "*" (and on
	// GET, which never reads it).
	IfVersion int64
	Body      B
}

// subIDs are the path parameters, besides id, that name an object by UUID: Handle parses
// the one a route has into Req.Sub. The other parameters ({job}, {n}, {name}, {v}) are names
// and numbers, which the handler reads with c.Params.
var subIDs = map[string]bool{"address_id": true, "delivery_id": true, "run": true, "iid": true, "finding": true}

// Handle is the one entry point of every /v1 handler: it parses the path's ids (400 naming
// the parameter), reads If-Match on a request that changes something (412 for a value this
// API could not have produced), decodes the body strictly into a B unless B is None (see
// Decode; a B embedding Optional may be left out) and calls decide with the request's context
// (c.UserContext(), which has the request's deadline) and the request. The role is not its
// concern: the route table declares it and Require enforces it first. decide answers through
// c, or returns an error for the problem handler.
func Handle[B any](decide func(ctx context.Context, c *fiber.Ctx, r Req[B]) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r, err := read[B](c)
		if err != nil {
			return err
		}
		return decide(c.UserContext(), c, r)
	}
}

func read[B any](c *fiber.Ctx) (Req[B], error) {
	r := Req[B]{Who: Principal(c)}
	var err error
	for _, name := range c.Route().Params {
		switch {
		case name == "id":
			r.ID, err = ParamID(c, name)
		case subIDs[name]:
			r.Sub, err = ParamID(c, name)
		}
		if err != nil {
			return r, err
		}
	}
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		if r.IfVersion, err = IfMatch(c); err != nil {
			return r, err
		}
	}
	switch any(r.Body).(type) {
	case None:
	case interface{ bodyOptional() }:
		r.Body, err = DecodeOptional[B](c)
	default:
		r.Body, err = Decode[B](c)
	}
	return r, err
}

// Object is an object as a handler answers it: its view, and the version its ETag carries (0:
// no ETag).
type Object struct {
	View    any
	Version int64
}

// Show answers 200 with o, and its ETag.
func Show(c *fiber.Ctx, o Object) error {
	if o.Version != 0 {
		c.Set(fiber.HeaderETag, ETag(o.Version))
	}
	return c.JSON(o.View)
}

// Get is the skeleton of a read of one object: load decides (404 for one the principal may
// not see) and the object is answered with its ETag.
func Get(load func(ctx context.Context, r Req[None]) (Object, error)) fiber.Handler {
	return Handle(func(ctx context.Context, c *fiber.Ctx, r Req[None]) error {
		o, err := load(ctx, r)
		if err != nil {
			return err
		}
		return Show(c, o)
	})
}

// ListPage is the skeleton of a list: ?limit= and ?cursor= parsed into page, list reads the page
// (and parses its own filters from c) and every item is shown through view.
func ListPage[T, V any](list func(ctx context.Context, c *fiber.Ctx, r Req[None], page store.Page) ([]T, *uuid.UUID, error), view func(T) V) fiber.Handler {
	return Handle(func(ctx context.Context, c *fiber.Ctx, r Req[None]) error {
		page, err := ParsePage(c)
		if err != nil {
			return err
		}
		items, next, err := list(ctx, c, r, page)
		if err != nil {
			return err
		}
		return c.JSON(NewList(Map(items, view), next))
	})
}

// Edit is the skeleton of a PATCH (or PUT) of the object at …/{id}: apply runs in one
// transaction — it checks the body (problems naming fields), writes only if the object is still
// at r.IfVersion, and records the activity — and the object is answered with its ETag. A
// failure at any point leaves the database as it was.
func Edit[B any](d Deps, apply func(ctx context.Context, tx pgx.Tx, r Req[B]) (Object, error)) fiber.Handler {
	return Handle(func(ctx context.Context, c *fiber.Ctx, r Req[B]) error {
		o, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (Object, error) {
			return apply(ctx, tx, r)
		})
		if err != nil {
			return err
		}
		return Show(c, o)
	})
}

// Delete is the skeleton of a DELETE of the object at …/{id}: remove runs in one transaction —
// it deletes (or answers why not: 404, 409) and records the activity — and the answer is 204.
func Delete(d Deps, remove func(ctx context.Context, tx pgx.Tx, r Req[None]) error) fiber.Handler {
	return Handle(func(ctx context.Context, c *fiber.Ctx, r Req[None]) error {
		if err := store.WithTx(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) error {
			return remove(ctx, tx, r)
		}); err != nil {
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
	})
}
