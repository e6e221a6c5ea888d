package middleware

import (
	"crypto/sha256"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// HeaderIdempotencyKey is the request header; HeaderReplayed marks a replayed response.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderReplayed       = "Idempotent-Replayed"
)

// replayedHeaders are the response headers stored with a response and sent again on replay.
var replayedHeaders = []string{fiber.HeaderLocation, fiber.HeaderETag}

// Idempotency makes POSTs and DELETEs (some start runs: a stack's removal, an action
// instance's undo) that carry an Idempotency-Key safe to retry (bots retry): the first
// request with a key runs and its response is stored in Postgres, scoped to the token; a retry
// with the same key and the same method, path and body gets that response again; the same key
// with another request is a 422; a retry while the first is still running is a 409. Keys live
// 24 h (the reconciler deletes older ones).
//
// The claim is its own transaction, before the handler's: a crash between the handler's commit
// and the response being stored leaves the key pending, and a retry after
// store.IdempotencyAbandonAfter runs the request again — which the endpoints that start work
// guard with their own state checks (a stack already deploying answers 409).
func Idempotency(d api.Deps) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if c.Method() != fiber.MethodPost && c.Method() != fiber.MethodDelete {
			return c.Next()
		}
		key := c.Get(HeaderIdempotencyKey)
		if key == "" {
			return c.Next()
		}
		if len(key) > 255 || !printableASCII(key) {
			return problem.Malformed("The Idempotency-Key must be 1 to 255 printable ASCII characters.")
		}
		key = string([]byte(key)) // copy: fasthttp reuses the header buffer
		p := api.Principal(c)
		path := c.Path()
		h := sha256.New()
		h.Write([]byte(c.Method() + " " + path + "\n"))
		h.Write(c.Body())
		hash := h.Sum(nil)

		ctx := c.UserContext()
		purpose := sealPurpose(p.TokenID, key)
		existing, err := store.IdempotencyBegin(ctx, d.DB, p.TokenID, key, c.Method(), path, hash)
		if err != nil {
			// The error handler tells a database that is down (a 503 the client retries)
			// from a bug (500).
			return fmt.Errorf("claim the idempotency key: %w", err)
		}
		if existing != nil && existing.Done && string(existing.RequestHash) == string(hash) {
			if existing.Body, err = d.Box.Open(purpose, existing.Body); err != nil {
				d.Log.InfoContext(ctx, "stored idempotent response does not open; running the request again", "error", err)
				if existing, err = reclaim(c, d, p.TokenID, key, path, hash); err != nil {
					return fmt.Errorf("claim the idempotency key again: %w", err)
				}
			}
		}
		if existing != nil {
			return replay(c, existing, hash)
		}

		err = c.Next()
		if err != nil {
			// Render the error now so that its response can be stored like any other.
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				return herr
			}
		}
		res := c.Response()
		status := res.StatusCode()
		if status >= 500 || status == fiber.StatusTooManyRequests {
			// Not an outcome: let the client's retry run the request again.
			if rerr := store.IdempotencyRelease(ctx, d.DB, p.TokenID, key); rerr != nil {
				d.Log.WarnContext(ctx, "release idempotency key", "error", rerr)
			}
			return nil
		}
		headers := map[string]string{}
		for _, name := range replayedHeaders {
			if v := res.Header.Peek(name); len(v) > 0 {
				headers[name] = string(v)
			}
		}
		body := d.Box.Seal(purpose, res.Body())
		if ferr := store.IdempotencyFinish(ctx, d.DB, p.TokenID, key, status, string(res.Header.ContentType()), headers, body); ferr != nil {
			d.Log.WarnContext(ctx, "store idempotent response", "error", ferr)
		}
		return nil
	}
}

// sealPurpose binds a stored body to its token and key, so that a sealed body copied to another
// row does not open there.
func sealPurpose(token uuid.UUID, key string) string {
	return "idempotent-response:" + token.String() + ":" + key
}

// reclaim forgets a done key whose stored body does not open and claims it again. It returns
// the record found instead when another request claimed the key in between.
func reclaim(c *fiber.Ctx, d api.Deps, token uuid.UUID, key, path string, hash []byte) (*store.IdempotencyRecord, error) {
	ctx := c.UserContext()
	if err := store.IdempotencyForget(ctx, d.DB, token, key); err != nil {
		return nil, err
	}
	r, err := store.IdempotencyBegin(ctx, d.DB, token, key, c.Method(), path, hash)
	if err != nil || r == nil || !r.Done {
		return r, err
	}
	// Done again already: a concurrent retry ran and stored it (sealed, by this code).
	if r.Body, err = d.Box.Open(sealPurpose(token, key), r.Body); err != nil {
		return nil, err
	}
	return r, nil
}

func replay(c *fiber.Ctx, r *store.IdempotencyRecord, hash []byte) error {
	if string(r.RequestHash) != string(hash) {
		return problem.New(problem.TypeIdempotencyReused, 422,
			"This Idempotency-Key was already used for a different request; use a new key for a new request.")
	}
	if !r.Done {
		return problem.New(problem.TypeIdempotencyInFlight, 409,
			"A request with this Idempotency-Key is still running; retry in a moment to get its response.")
	}
	for k, v := range r.Headers {
		c.Set(k, v)
	}
	c.Set(HeaderReplayed, "true")
	c.Set(fiber.HeaderContentType, r.ContentType)
	return c.Status(r.Status).Send(r.Body)
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
