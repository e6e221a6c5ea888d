// Package setup makes the first admin of an installation that has none, without a hand-made
// token: an API process that starts with no admin (and no HORIZON_BOOTSTRAP_ADMIN_TOKEN) logs a
// one-time setup token, valid for SetupTokenTTL, which POST /v1/setup exchanges — once, for the
// whole installation — for an admin user and their first API token. The route needs no
// bearer token; the setup token is the proof, and 32 random bytes are not guessed.
package setup

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// SetupTokenTTL is how long a setup token is valid; a restart issues a new one.
const SetupTokenTTL = 24 * time.Hour

// Issue logs a setup token when the installation has no admin yet. The token is a secret
// written to the log on purpose, as the one way in for whoever runs the process; it is good
// once, for SetupTokenTTL, and only until an admin exists.
func Issue(ctx context.Context, q store.Querier, log *slog.Logger) error {
	tok := auth.NewSetupToken()
	issued, err := store.SetupTokenIssue(ctx, q, auth.HashToken(tok.Reveal()), SetupTokenTTL)
	if err != nil || !issued {
		return err
	}
	log.Warn("Horizon has no admin yet: make the first one with this one-time setup token, within 24 h: "+
		`curl -X POST <api>/v1/setup -H 'Content-Type: application/json' -d '{"setup_token": "<token>", "name": "…", "email": "…"}'`,
		"setup_token", tok.Reveal())
	return nil
}

// Request is the body of POST /v1/setup.
type Request struct {
	SetupToken string `json:"setup_token"`
	Name       string `json:"name"`
	Email      string `json:"email"`
}

// Response is the first admin and their API token, shown once.
type Response struct {
	UserID uuid.UUID `json:"user_id"`
	Token  string    `json:"token"`
}

// Claim makes the first admin.
func Claim(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[Request]) error {
		var p horizon.Problems
		horizon.CheckName(&p, "name", r.Body.Name, horizon.MaxNameLength)
		horizon.CheckEmail(&p, "email", r.Body.Email)
		if r.Body.SetupToken == "" {
			p.Add("setup_token", "is required: the API logs it at start while no admin exists")
		}
		if err := p.Err(); err != nil {
			return err
		}
		token := auth.NewToken()
		user, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (uuid.UUID, error) {
			user, err := store.SetupClaim(ctx, tx, auth.HashToken(r.Body.SetupToken), r.Body.Name, r.Body.Email, auth.HashToken(token.Reveal()))
			if err != nil {
				return user, err
			}
			return user, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &user, Action: "user.setup", ObjectType: "user", ObjectID: &user,
				Details: map[string]any{"name": r.Body.Name}})
		})
		switch {
		case errors.Is(err, horizon.ErrConflict):
			return problem.Conflict("Horizon already has an admin: setup is closed. Ask an admin for a token.")
		case errors.Is(err, horizon.ErrNotFound):
			return problem.Unauthenticated("The setup token is unknown, used or expired; restart the API to have a new one logged.")
		case err != nil:
			return err
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.Status(fiber.StatusCreated).JSON(Response{UserID: user, Token: token.Reveal()})
	})
}
