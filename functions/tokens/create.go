package tokens

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/tokens. UserID defaults to the caller, Scope to
// "full".
type CreateRequest struct {
	UserID *uuid.UUID       `json:"user_id"`
	Name   string           `json:"name"`
	Scope  *auth.TokenScope `json:"scope"`
}

// Created is the one answer that carries the token itself.
type Created struct {
	Token
	Secret string `json:"token"`
}

// Create mints a token.
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		owner := r.Who.UserID
		if r.Body.UserID != nil {
			owner = *r.Body.UserID
		}
		if owner != r.Who.UserID && !r.Who.IsAdmin() {
			return problem.Forbidden("Only admins may mint tokens for other users.")
		}
		var p horizon.Problems
		horizon.CheckName(&p, "name", r.Body.Name, horizon.MaxNameLength)
		scope := auth.TokenFull
		if r.Body.Scope != nil {
			scope = *r.Body.Scope
			if !scope.Valid() {
				p.Add("scope", `must be "full", "deploy", "read" or "prometheus"`)
			}
		}
		if err := p.Err(); err != nil {
			return err
		}
		secret := auth.NewToken()
		t, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.Token, error) {
			if _, err := store.UserGet(ctx, tx, r.Who, owner); errors.Is(err, horizon.ErrNotFound) {
				return horizon.Token{}, horizon.Invalid("user_id", "is not a user")
			} else if err != nil {
				return horizon.Token{}, err
			}
			t, err := store.TokenCreate(ctx, tx, owner, r.Body.Name, scope, auth.HashToken(secret.Reveal()))
			if err != nil {
				return t, err
			}
			return t, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "token.create",
				ObjectType: "token", ObjectID: &t.ID, Details: map[string]any{"user_id": owner, "name": t.Name, "scope": t.Scope}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderLocation, "/v1/tokens/"+t.ID.String())
		return c.Status(fiber.StatusCreated).JSON(Created{Token: toToken(t), Secret: secret.Reveal()})
	})
}
