package signin

import (
	"context"
	"encoding/hex"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/auth"
	"horizon/shared/store"
)

// Code is a minted sign-in code: pass it to POST /v1/sign-in (the console reads it from
// #code= in its URL) before ExpiresAt.
type Code struct {
	Code      string    `json:"code"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Mint makes a one-time sign-in code standing for the caller's API token.
func Mint(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[api.None]) error {
		// The authentication middleware accepted exactly this header's token; copy it, as
		// Fiber reuses its buffers.
		_, token, _ := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
		token = strings.Clone(strings.TrimSpace(token))
		code := auth.NewSignInCode()
		hash := auth.HashToken(code.Reveal())
		expires, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (time.Time, error) {
			expires, err := store.SignInCodeInsert(ctx, tx, hash, r.Who.TokenID, d.Box.SealString(sealPurpose(hash), token), CodeTTL)
			if err != nil {
				return expires, err
			}
			return expires, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "token.sign_in_code",
				ObjectType: "token", ObjectID: &r.Who.TokenID, Details: map[string]any{"expires_at": expires}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.Status(fiber.StatusCreated).JSON(Code{Code: code.Reveal(), ExpiresAt: expires.UTC()})
	})
}

// sealPurpose binds a sealed token to its code's hash: a sealed value copied to another row
// does not open.
func sealPurpose(hash []byte) string { return "sign_in_codes.sealed_token:" + hex.EncodeToString(hash) }
