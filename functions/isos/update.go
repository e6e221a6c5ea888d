package isos

import (
	"context"
	"errors"
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/events"
	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/problem"
	"horizon/shared/store"
)

// UpdateRequest is the body of PATCH /v1/isos/{id}; absent fields are left as they are, and
// none may be null.
type UpdateRequest struct {
	Name    api.Field[string] `json:"name"`
	Version api.Field[int]    `json:"version"`
	Storage api.Field[string] `json:"storage"`
}

// Update edits an ISO (admin, If-Match): its name, the template version it builds, or the
// storage its image is downloaded to. It starts nothing: when what the ISO would build changes,
// it is outdated, and the next run (retry) rebuilds it. Refused while a run is in progress
// (409) and for a removed ISO.
func Update(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[UpdateRequest]) error {
		var p horizon.Problems
		if r.Body.Name.Given() {
			horizon.CheckName(&p, "name", r.Body.Name.Value(), horizon.MaxNameLength)
		}
		if err := p.Err(); err != nil {
			return err
		}
		out, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (Detail, error) {
			iso, err := store.ISOGetForUpdate(ctx, tx, r.ID)
			if err != nil {
				return Detail{}, err
			}
			if r.IfVersion != 0 && iso.Version != r.IfVersion {
				return Detail{}, horizon.ErrStale
			}
			if iso.State == horizon.ISORemoved {
				return Detail{}, problem.Conflict("The ISO was removed; build a new one.")
			}
			if err := runOwner.NotBusy(ctx, tx, store.OfISO(iso.ID)); err != nil {
				return Detail{}, err
			}
			patch := store.ISOPatch{Name: r.Body.Name.Ptr()}
			if r.Body.Version.Given() || r.Body.Storage.Given() {
				t, err := store.ISOTemplateGet(ctx, tx, iso.ISOTemplateID)
				if err != nil {
					return Detail{}, err
				}
				version, storage := iso.ISOTemplateVersion, iso.Storage
				r.Body.Version.Apply(&version)
				r.Body.Storage.Apply(&storage)
				spec, v, err := specOf(ctx, tx, t, version)
				if errors.Is(err, horizon.ErrNotFound) {
					return Detail{}, horizon.Invalid("version", "is not a version of ISO template %s (it has 1 to %d)", t.Name, t.LatestVersion)
				}
				if err != nil {
					return Detail{}, err
				}
				srv, err := store.ProxmoxServerGet(ctx, tx, iso.ServerID)
				if err != nil {
					return Detail{}, err
				}
				artifact := checkPlacement(&p, srv, iso.Node, storage, iso.Kind, spec)
				if err := p.Err(); err != nil {
					return Detail{}, err
				}
				if err := reserve(ctx, tx, iso, spec); err != nil {
					return Detail{}, err
				}
				hash := isotemplate.ConfigHash(v.SpecHash, iso.Node, storage)
				patch.Version, patch.Storage, patch.ArtifactStorage, patch.ConfigHash = &version, &storage, &artifact, &hash
			}
			iso, err = store.ISOUpdate(ctx, tx, r.ID, patch, 0)
			if err != nil {
				return Detail{}, err
			}
			changed := []string{}
			for field, set := range map[string]bool{"name": r.Body.Name.Given(), "version": r.Body.Version.Given(), "storage": r.Body.Storage.Given()} {
				if set {
					changed = append(changed, field)
				}
			}
			slices.Sort(changed)
			if err := store.ActivityRecord(ctx, tx, store.Activity{ActorID: &r.Who.UserID, Action: "iso.update", ObjectType: "iso", ObjectID: &iso.ID,
				Details: map[string]any{"changed": changed, "version": iso.ISOTemplateVersion, "storage": iso.Storage, "outdated": iso.Outdated()}}); err != nil {
				return Detail{}, err
			}
			return detail(ctx, tx, iso, r.Who)
		})
		if err != nil {
			return err
		}
		d.Notify(ctx, events.Event{Type: events.ISO, ID: out.ID, State: out.State})
		c.Set(fiber.HeaderETag, api.ETag(out.Version))
		return c.JSON(out)
	})
}
