package signin

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// ExchangeRequest is the body of POST /v1/sign-in.
type ExchangeRequest struct {
	Code string `json:"code"`
}

// Exchanged is the API token a sign-in code stood for.
type Exchanged struct {
	Token string `json:"token"`
}

// Exchange spends a sign-in code and answers the API token it stands for. It needs no bearer
// token: the code is the proof.
func Exchange(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[ExchangeRequest]) error {
		if r.Body.Code == "" {
			return horizon.Invalid("code", "is required: the #code= of a sign-in link")
		}
		hash := auth.HashToken(r.Body.Code)
		sealed, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			sealed, tokenID, user, err := store.SignInCodeSpend(ctx, tx, hash)
			if err != nil {
				return nil, err
			}
			return sealed, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &user, Action: "token.sign_in",
				ObjectType: "token", ObjectID: &tokenID})
		})
		if errors.Is(err, horizon.ErrNotFound) {
			return problem.Unauthenticated("This sign-in code is unknown, used or expired: ask for a new sign-in link, or sign in with an API token.")
		}
		if err != nil {
			return err
		}
		token, err := d.Box.OpenString(sealPurpose(hash), sealed)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(Exchanged{Token: token.Reveal()})
	})
}
