package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const isoTemplateColumns = `id, name, description, kind, active, latest_version, created_by, version, created_at, updated_at`

func scanISOTemplate(row pgx.Row) (horizon.ISOTemplate, error) {
	var t horizon.ISOTemplate
	err := row.Scan(&t.ID, &t.Name, &t.Description, &t.Kind, &t.Active, &t.LatestVersion, &t.CreatedBy, &t.Version, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

const isoVersionColumns = `iso_template_id, number, spec, spec_hash, created_by, created_at`

func scanISOVersion(row pgx.Row) (horizon.ISOTemplateVersion, error) {
	var v horizon.ISOTemplateVersion
	var spec []byte
	err := row.Scan(&v.ISOTemplateID, &v.Number, &spec, &v.SpecHash, &v.CreatedBy, &v.CreatedAt)
	v.Spec = spec
	return v, err
}

// ISOTemplateCreate inserts an ISO template with its first version (v.Number is ignored and
// becomes 1). A taken name is a *horizon.ConflictError on "name".
func ISOTemplateCreate(ctx context.Context, q Querier, t horizon.ISOTemplate, v horizon.ISOTemplateVersion) (horizon.ISOTemplate, error) {
	out, err := scanISOTemplate(q.QueryRow(ctx, `INSERT INTO iso_templates (name, description, kind, active, latest_version, created_by)
		VALUES ($1, $2, $3, $4, 1, $5) RETURNING `+isoTemplateColumns, t.Name, t.Description, t.Kind, t.Active, t.CreatedBy))
	if err != nil {
		return out, translate(err)
	}
	v.ISOTemplateID, v.Number = out.ID, 1
	ver, err := insertISOVersion(ctx, q, v)
	if err != nil {
		return out, err
	}
	out.Versions = []horizon.ISOTemplateVersionSummary{{Number: ver.Number, SpecHash: ver.SpecHash, CreatedBy: ver.CreatedBy, CreatedAt: ver.CreatedAt}}
	return out, nil
}

// ISOTemplateVersionCreate adds the next version of an ISO template, numbered under the
// template's row lock; ifVersion, when not 0, must be the template's version (horizon.ErrStale).
func ISOTemplateVersionCreate(ctx context.Context, q Querier, v horizon.ISOTemplateVersion, ifVersion int64) (horizon.ISOTemplateVersion, error) {
	err := q.QueryRow(ctx, `UPDATE iso_templates SET latest_version = latest_version + 1, version = version + 1, updated_at = now()
		WHERE id = $1 AND ($2 = 0 OR version = $2) RETURNING latest_version`, v.ISOTemplateID, ifVersion).Scan(&v.Number)
	if err != nil {
		return v, staleOrMissing(ctx, q, err, "iso_templates", v.ISOTemplateID)
	}
	return insertISOVersion(ctx, q, v)
}

func insertISOVersion(ctx context.Context, q Querier, v horizon.ISOTemplateVersion) (horizon.ISOTemplateVersion, error) {
	out, err := scanISOVersion(q.QueryRow(ctx, `INSERT INTO iso_template_versions (iso_template_id, number, spec, spec_hash, created_by)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+isoVersionColumns, v.ISOTemplateID, v.Number, string(v.Spec), v.SpecHash, v.CreatedBy))
	return out, translate(err)
}

// ISOTemplateGet returns an ISO template with the summaries of its versions.
func ISOTemplateGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.ISOTemplate, error) {
	t, err := scanISOTemplate(q.QueryRow(ctx, `SELECT `+isoTemplateColumns+` FROM iso_templates WHERE id = $1`, id))
	if err != nil {
		return t, fmt.Errorf("ISO template %s: %w", id, translate(err))
	}
	rows, err := q.Query(ctx, `SELECT number, spec_hash, created_by, created_at FROM iso_template_versions
		WHERE iso_template_id = $1 ORDER BY number`, id)
	if err != nil {
		return t, translate(err)
	}
	t.Versions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ISOTemplateVersionSummary, error) {
		var s horizon.ISOTemplateVersionSummary
		err := r.Scan(&s.Number, &s.SpecHash, &s.CreatedBy, &s.CreatedAt)
		return s, err
	})
	return t, translate(err)
}

// ISOTemplateFilter narrows ISOTemplateList; zero fields do not filter.
type ISOTemplateFilter struct {
	Active *bool
	Kind   horizon.ISOKind
}

// ISOTemplateList returns one page of ISO templates, without their versions.
func ISOTemplateList(ctx context.Context, q Querier, f ISOTemplateFilter, p Page) ([]horizon.ISOTemplate, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+isoTemplateColumns+` FROM iso_templates
		WHERE ($1::boolean IS NULL OR active = $1) AND ($2 = '' OR kind = $2) AND ($3::uuid IS NULL OR id > $3)
		ORDER BY id LIMIT $4`, f.Active, string(f.Kind), p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.ISOTemplate, error) { return scanISOTemplate(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	ts, next := cut(ts, p, func(t horizon.ISOTemplate) uuid.UUID { return t.ID })
	return ts, next, nil
}

// ISOTemplateUpdate applies a patch (nil fields are left) if the version is still ifVersion
// (0 skips the check). A taken name is a *horizon.ConflictError.
func ISOTemplateUpdate(ctx context.Context, q Querier, id uuid.UUID, p TemplatePatch, ifVersion int64) (horizon.ISOTemplate, error) {
	var got uuid.UUID
	err := q.QueryRow(ctx, `UPDATE iso_templates SET name = COALESCE($2, name), description = COALESCE($3, description),
		active = COALESCE($4, active), version = version + 1, updated_at = now()
		WHERE id = $1 AND ($5 = 0 OR version = $5) RETURNING id`, id, p.Name, p.Description, p.Active, ifVersion).Scan(&got)
	if err != nil {
		return horizon.ISOTemplate{}, staleOrMissing(ctx, q, err, "iso_templates", id)
	}
	return ISOTemplateGet(ctx, q, id)
}

// ISOTemplateVersionGet returns version number of an ISO template; horizon.ErrNotFound when
// either does not exist.
func ISOTemplateVersionGet(ctx context.Context, q Querier, id uuid.UUID, number int) (horizon.ISOTemplateVersion, error) {
	v, err := scanISOVersion(q.QueryRow(ctx, `SELECT `+isoVersionColumns+` FROM iso_template_versions
		WHERE iso_template_id = $1 AND number = $2`, id, number))
	if err != nil {
		return v, fmt.Errorf("ISO template %s version %d: %w", id, number, translate(err))
	}
	return v, nil
}
