package isos

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/functions/api"
	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/store"
)

// CreateRequest is the body of POST /v1/isos. Version defaults to the template's latest;
// storage to the template's; name to "<template> v<version> on <node>".
type CreateRequest struct {
	Name            *string        `json:"name"`
	ISOTemplateID   uuid.UUID      `json:"iso_template_id"`
	Version         *int           `json:"version"`
	ProxmoxServerID uuid.UUID      `json:"proxmox_server_id"`
	Node            string         `json:"node"`
	Storage         string         `json:"storage"`
	Stages          *StagesRequest `json:"stages"`
}

// Create starts building an ISO template version on a node (admin): it checks the request
// against the catalogue and Horizon's inventory of the cluster, reporting every problem at
// once (422), reserves the spec's VM ids in the cluster (409 when another ISO or a stack holds
// one), and answers 202 with the ISO and its first run. A repeated Idempotency-Key returns
// the ISO created the first time.
func Create(d api.Deps) fiber.Handler {
	return api.Handle(func(ctx context.Context, c *fiber.Ctx, r api.Req[CreateRequest]) error {
		var p horizon.Problems
		if r.Body.Name != nil {
			horizon.CheckName(&p, "name", *r.Body.Name, horizon.MaxNameLength)
		}
		t, err := store.ISOTemplateGet(ctx, d.DB, r.Body.ISOTemplateID)
		switch {
		case errors.Is(err, horizon.ErrNotFound):
			p.Add("iso_template_id", "is not an ISO template")
		case err != nil:
			return err
		case !t.Active:
			p.Add("iso_template_id", "is not active: new ISOs cannot be built from it")
		}
		srv, err := store.ProxmoxServerGet(ctx, d.DB, r.Body.ProxmoxServerID)
		switch {
		case errors.Is(err, horizon.ErrNotFound):
			p.Add("proxmox_server_id", "is not a Proxmox server")
		case err != nil:
			return err
		}
		if !p.Empty() {
			return p.Err()
		}
		version := t.LatestVersion
		if r.Body.Version != nil {
			version = *r.Body.Version
		}
		spec, v, err := specOf(ctx, d.DB, t, version)
		if errors.Is(err, horizon.ErrNotFound) {
			return horizon.Invalid("version", "is not a version of ISO template %s (it has 1 to %d)", t.Name, t.LatestVersion)
		}
		if err != nil {
			return err
		}
		storage := r.Body.Storage
		if storage == "" {
			storage = spec.Storage
		}
		artifact := checkPlacement(&p, srv, r.Body.Node, storage, t.Kind, spec)
		sel := r.Body.Stages.selection()
		sel.Check(&p, "stages", spec.Stages(t.Kind))
		if err := p.Err(); err != nil {
			return err
		}
		name := defaultName(t, version, r.Body.Node)
		if r.Body.Name != nil {
			name = *r.Body.Name
		}
		iso := horizon.ISO{Name: name, ISOTemplateID: t.ID, ISOTemplateVersion: version, Kind: t.Kind, ServerID: srv.ID, Node: r.Body.Node,
			Storage: storage, ArtifactStorage: artifact, ConfigHash: isotemplate.ConfigHash(v.SpecHash, r.Body.Node, storage), CreatedBy: &r.Who.UserID}
		var run horizon.Run
		out, err := store.WithTxV(ctx, d.DB, func(ctx context.Context, tx pgx.Tx) (Detail, error) {
			var err error
			if iso, err = store.ISOInsert(ctx, tx, iso); err != nil {
				return Detail{}, err
			}
			if err := reserve(ctx, tx, iso, spec); err != nil {
				return Detail{}, err
			}
			if run, err = startRun(ctx, tx, iso, build(iso, spec, sel), r.Who); err != nil {
				return Detail{}, err
			}
			return detail(ctx, tx, iso, r.Who)
		})
		if err != nil {
			return err
		}
		return accepted(c, d, iso, run, out)
	})
}
