package api

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/auth"
	"horizon/shared/store"
)

// Edit is what an admin's PATCH of the object at …/{id} asks for.
type Edit[Req any] struct {
	ID uuid.UUID
	// IfVersion is the version If-Match names, 0 when the header is absent.
	IfVersion int64
	Body      Req
	Who       auth.Principal
}

// Edited is the answer to an Edit: the object as the API shows it, and the version its ETag
// carries.
type Edited struct {
	View    any
	Version int64
}

// AdminEdit is the one skeleton of an admin's PATCH of a catalogue object named by the path's
// {id}: the admin check, the id, If-Match, the body decoded strictly, then apply in one
// transaction — apply checks the body (problems naming fields), writes only if the object is
// still at IfVersion, and records the activity — and the object with its ETag. A failure at
// any point leaves the database as it was.
func AdminEdit[Req any](d Deps, apply func(ctx context.Context, tx pgx.Tx, e Edit[Req]) (Edited, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		e, err := ReadAdminEdit[Req](c)
		if err != nil {
			return err
		}
		out, err := store.WithTxV(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) (Edited, error) {
			return apply(ctx, tx, e)
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, ETag(out.Version))
		return c.JSON(out.View)
	}
}

// ReadAdminEdit reads an admin's PATCH of the object at …/{id}: the admin check, the id,
// If-Match and the body decoded strictly. Handlers whose change must be checked outside any
// transaction (against a cluster, a Nagios server) start with it; the others use AdminEdit.
func ReadAdminEdit[Req any](c *fiber.Ctx) (Edit[Req], error) {
	if err := RequireAdmin(c); err != nil {
		return Edit[Req]{}, err
	}
	id, err := ParamID(c, "id")
	if err != nil {
		return Edit[Req]{}, err
	}
	ifVersion, err := IfMatch(c)
	if err != nil {
		return Edit[Req]{}, err
	}
	body, err := Decode[Req](c)
	if err != nil {
		return Edit[Req]{}, err
	}
	return Edit[Req]{ID: id, IfVersion: ifVersion, Body: body, Who: Principal(c)}, nil
}

// AdminDelete is the one skeleton of an admin's DELETE of a catalogue object named by the
// path's {id}: the admin check, the id, then remove in one transaction — remove deletes (or
// answers why not: 404, 409) and records the activity — and 204.
func AdminDelete(d Deps, remove func(ctx context.Context, tx pgx.Tx, id uuid.UUID, who auth.Principal) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := RequireAdmin(c); err != nil {
			return err
		}
		id, err := ParamID(c, "id")
		if err != nil {
			return err
		}
		who := Principal(c)
		if err := store.WithTx(c.UserContext(), d.DB, func(ctx context.Context, tx pgx.Tx) error {
			return remove(ctx, tx, id, who)
		}); err != nil {
			return err
		}
		return c.SendStatus(fiber.StatusNoContent)
	}
}

// SetGiven sets *dst to *v when a PATCH gave the field (v not nil), and reports whether it did.
func SetGiven[T any](dst *T, v *T) bool {
	if v != nil {
		*dst = *v
	}
	return v != nil
}
