package api

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/shared/auth"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// PrincipalLocal is the fiber.Ctx local the auth middleware stores the principal under.
const PrincipalLocal = "principal"

// Principal returns who the request acts as. Only routes behind the auth middleware call it.
func Principal(c *fiber.Ctx) auth.Principal {
	p, _ := c.Locals(PrincipalLocal).(auth.Principal)
	return p
}

// ParamID parses the path parameter name as a UUID. Fiber reuses its buffers, so the value is
// copied by parsing before the handler goes on.
func ParamID(c *fiber.Ctx, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Params(name))
	if err != nil {
		return uuid.Nil, problem.Malformed("The %s in the path must be a UUID.", name)
	}
	return id, nil
}

// QueryID parses an optional UUID query parameter.
func QueryID(c *fiber.Ctx, name string) (*uuid.UUID, error) {
	v := c.Query(name)
	if v == "" {
		return nil, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return nil, problem.Malformed("The query parameter %s must be a UUID.", name)
	}
	return &id, nil
}

// QueryBool parses an optional boolean query parameter.
func QueryBool(c *fiber.Ctx, name string) (*bool, error) {
	v := c.Query(name)
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return nil, problem.Malformed("The query parameter %s must be true or false.", name)
	}
	return &b, nil
}

// DefaultPageLimit is the page size when ?limit= is absent.
const DefaultPageLimit = 50

// ParsePage reads ?limit= (1–200, default 50) and ?cursor= (opaque, from a previous page).
func ParsePage(c *fiber.Ctx) (store.Page, error) {
	p := store.Page{Limit: DefaultPageLimit}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxPageLimit {
			return p, problem.Malformed("The query parameter limit must be an integer from 1 to %d.", store.MaxPageLimit)
		}
		p.Limit = n
	}
	if v := c.Query("cursor"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || len(b) != 16 {
			return p, problem.Malformed("The query parameter cursor is not one this API returned.")
		}
		id := uuid.UUID(b)
		p.After = &id
	}
	return p, nil
}

// List is the envelope of every list response.
type List[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// NewList wraps a page of items and the store's next-page id.
func NewList[T any](items []T, next *uuid.UUID) List[T] {
	l := List[T]{Items: items}
	if l.Items == nil {
		l.Items = []T{}
	}
	if next != nil {
		s := base64.RawURLEncoding.EncodeToString(next[:])
		l.NextCursor = &s
	}
	return l
}

// Map converts a slice with f.
func Map[A, B any](as []A, f func(A) B) []B {
	bs := make([]B, len(as))
	for i, a := range as {
		bs[i] = f(a)
	}
	return bs
}

// ETag formats an object version as a strong entity tag.
func ETag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// IfMatch returns the version named by the If-Match header, or 0 when the header is absent or
// "*". A value this API could not have produced is a 412: it cannot match.
func IfMatch(c *fiber.Ctx) (int64, error) {
	v := strings.TrimSpace(c.Get(fiber.HeaderIfMatch))
	if v == "" || v == "*" {
		return 0, nil
	}
	v = strings.TrimPrefix(v, "W/")
	n, err := strconv.ParseInt(strings.Trim(v, `"`), 10, 64)
	if err != nil || n <= 0 {
		return 0, problem.Stale()
	}
	return n, nil
}

// LastEventID returns where an event stream's client asks to resume: the Last-Event-ID header
// that EventSource sends when it reconnects, or else ?last_event_id=, for a client that opens a
// new EventSource (with a new stream token) and cannot set the header. "" means neither.
func LastEventID(c *fiber.Ctx) string {
	if v := c.Get("Last-Event-ID"); v != "" {
		return strings.Clone(v) // fasthttp reuses the header buffer
	}
	return strings.Clone(c.Query("last_event_id"))
}

// OwnerList is the one skeleton of a list of objects that belong to users (SSH keys, tokens):
// the caller's own; an admin's are everyone's, or one user's with ?user_id=, which anyone else
// may name only for themselves (403 otherwise). what names the objects in that refusal.
func OwnerList[T, V any](what string, list func(ctx context.Context, who auth.Principal, forUser *uuid.UUID, page store.Page) ([]T, *uuid.UUID, error), view func(T) V) fiber.Handler {
	return ListPage(func(ctx context.Context, c *fiber.Ctx, r Req[None], page store.Page) ([]T, *uuid.UUID, error) {
		forUser, err := QueryID(c, "user_id")
		if err != nil {
			return nil, nil, err
		}
		if forUser != nil && *forUser != r.Who.UserID && !r.Who.IsAdmin() {
			return nil, nil, problem.Forbidden("Only admins may list other users' %s.", what)
		}
		return list(ctx, r.Who, forUser, page)
	}, view)
}
