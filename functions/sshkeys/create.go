package sshkeys

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/sshkey"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/ssh-keys. UserID defaults to the caller.
type CreateRequest struct {
	UserID    *uuid.UUID `json:"user_id"`
	Name      string     `json:"name"`
	PublicKey string     `json:"public_key"`
}

// Create registers a public key, answering its SHA256 fingerprint. Garbage, DSA and RSA keys
// under 2048 bits are refused (422).
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		owner := r.Who.UserID
		if r.Body.UserID != nil {
			owner = *r.Body.UserID
		}
		if owner != r.Who.UserID && !r.Who.IsAdmin() {
			return problem.Forbidden("Only admins may register keys for other users.")
		}
		var p horizon.Problems
		horizon.CheckName(&p, "name", r.Body.Name, horizon.MaxNameLength)
		key, kerr := sshkey.Parse(r.Body.PublicKey)
		if kerr != nil {
			p.Add("public_key", "%s", kerr.Error())
		}
		if err := p.Err(); err != nil {
			return err
		}
		k, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (horizon.SSHKey, error) {
			if _, err := store.UserGet(ctx, tx, r.Who, owner); errors.Is(err, horizon.ErrNotFound) {
				return horizon.SSHKey{}, horizon.Invalid("user_id", "is not a user")
			} else if err != nil {
				return horizon.SSHKey{}, err
			}
			k, err := store.SSHKeyCreate(ctx, tx, horizon.SSHKey{UserID: owner, Name: r.Body.Name, PublicKey: key.Line,
				Type: key.Type, Bits: key.Bits, Fingerprint: key.Fingerprint})
			if err != nil {
				return k, err
			}
			return k, store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "ssh_key.create",
				ObjectType: "ssh_key", ObjectID: &k.ID, Details: map[string]any{"user_id": owner, "fingerprint": k.Fingerprint}})
		})
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderLocation, "/v1/ssh-keys/"+k.ID.String())
		return c.Status(fiber.StatusCreated).JSON(toSSHKey(k))
	})
}
