package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const templateColumns = `id, name, description, active, latest_version, created_by, version, created_at, updated_at`

func scanTemplate(row pgx.Row) (horizon.Template, error) {
	var t horizon.Template
	err := row.Scan(&t.ID, &t.Name, &t.Description, &t.Active, &t.LatestVersion, &t.CreatedBy, &t.Version, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

// TemplateCreate inserts a template together with its first version (v.Number is ignored and
// becomes 1). A taken name is a *horizon.ConflictError on "name".
func TemplateCreate(ctx context.Context, q Querier, t horizon.Template, v horizon.TemplateVersion) (horizon.Template, horizon.TemplateVersion, error) {
	out, err := scanTemplate(q.QueryRow(ctx, `INSERT INTO templates (name, description, active, latest_version, created_by)
		VALUES ($1, $2, $3, 1, $4) RETURNING `+templateColumns, t.Name, t.Description, t.Active, t.CreatedBy))
	if err != nil {
		return horizon.Template{}, horizon.TemplateVersion{}, translate(err)
	}
	v.TemplateID, v.Number = out.ID, 1
	ver, err := insertVersion(ctx, q, v)
	if err != nil {
		return horizon.Template{}, horizon.TemplateVersion{}, err
	}
	out.Versions = []horizon.TemplateVersionSummary{summaryOf(ver)}
	return out, ver, nil
}

// TemplateVersionCreate adds the next version of a template: its number is the template's
// latest plus one, assigned under a row lock so that concurrent uploads get distinct numbers.
// The template's version (its ETag) moves too, since its latest_version changes. ifVersion, when
// not 0, must be the template's current version (horizon.ErrStale otherwise); a missing
// template is horizon.ErrNotFound.
func TemplateVersionCreate(ctx context.Context, q Querier, v horizon.TemplateVersion, ifVersion int64) (horizon.TemplateVersion, error) {
	var number int
	err := q.QueryRow(ctx, `UPDATE templates SET latest_version = latest_version + 1, version = version + 1, updated_at = now()
		WHERE id = $1 AND ($2 = 0 OR version = $2) RETURNING latest_version`, v.TemplateID, ifVersion).Scan(&number)
	if err != nil {
		return horizon.TemplateVersion{}, staleOrMissing(ctx, q, err, "templates", v.TemplateID)
	}
	v.Number = number
	return insertVersion(ctx, q, v)
}

func insertVersion(ctx context.Context, q Querier, v horizon.TemplateVersion) (horizon.TemplateVersion, error) {
	actions := v.ActionCommits
	if actions == nil {
		actions = map[string]string{}
	}
	out, err := scanVersion(q.QueryRow(ctx, `INSERT INTO template_versions
		(template_id, number, definition, definition_hash, job_commits, action_commits, modules, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+versionColumns,
		v.TemplateID, v.Number, string(v.Definition), v.DefinitionHash, v.JobCommits, actions, string(v.Modules), v.CreatedBy))
	return out, translate(err)
}

const versionColumns = `template_id, number, definition, definition_hash, job_commits, action_commits, modules, created_by, created_at`

func scanVersion(row pgx.Row) (horizon.TemplateVersion, error) {
	var v horizon.TemplateVersion
	var def, mods []byte
	err := row.Scan(&v.TemplateID, &v.Number, &def, &v.DefinitionHash, &v.JobCommits, &v.ActionCommits, &mods, &v.CreatedBy, &v.CreatedAt)
	v.Definition, v.Modules = def, mods
	return v, err
}

func summaryOf(v horizon.TemplateVersion) horizon.TemplateVersionSummary {
	return horizon.TemplateVersionSummary{Number: v.Number, DefinitionHash: v.DefinitionHash, CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt}
}

// TemplateGet returns a template with the summaries of all its versions. Templates are
// catalogue objects every authenticated user reads.
func TemplateGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.Template, error) {
	t, err := scanTemplate(q.QueryRow(ctx, `SELECT `+templateColumns+` FROM templates WHERE id = $1`, id))
	if err != nil {
		return t, fmt.Errorf("template %s: %w", id, translate(err))
	}
	rows, err := q.Query(ctx, `SELECT number, definition_hash, created_by, created_at FROM template_versions
		WHERE template_id = $1 ORDER BY number`, id)
	if err != nil {
		return t, translate(err)
	}
	t.Versions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.TemplateVersionSummary, error) {
		var s horizon.TemplateVersionSummary
		err := r.Scan(&s.Number, &s.DefinitionHash, &s.CreatedBy, &s.CreatedAt)
		return s, err
	})
	return t, translate(err)
}

// TemplateFilter narrows TemplateList; nil fields do not filter.
type TemplateFilter struct {
	Active *bool
}

// TemplateList returns one page of templates, without their versions.
func TemplateList(ctx context.Context, q Querier, f TemplateFilter, p Page) ([]horizon.Template, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+templateColumns+` FROM templates
		WHERE ($1::boolean IS NULL OR active = $1) AND ($2::uuid IS NULL OR id > $2) ORDER BY id LIMIT $3`,
		f.Active, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.Template, error) { return scanTemplate(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	ts, next := cut(ts, p, func(t horizon.Template) uuid.UUID { return t.ID })
	return ts, next, nil
}

// TemplatePatch holds the fields a PATCH changes; nil leaves a field as it is.
type TemplatePatch struct {
	Name, Description *string
	Active            *bool
}

// TemplateUpdate applies a patch if the version is still ifVersion (0 skips the check), and
// returns the template with its versions. A taken name is a *horizon.ConflictError.
func TemplateUpdate(ctx context.Context, q Querier, id uuid.UUID, p TemplatePatch, ifVersion int64) (horizon.Template, error) {
	var got uuid.UUID
	err := q.QueryRow(ctx, `UPDATE templates SET name = COALESCE($2, name), description = COALESCE($3, description),
		active = COALESCE($4, active), version = version + 1, updated_at = now()
		WHERE id = $1 AND ($5 = 0 OR version = $5) RETURNING id`, id, p.Name, p.Description, p.Active, ifVersion).Scan(&got)
	if err != nil {
		return horizon.Template{}, staleOrMissing(ctx, q, err, "templates", id)
	}
	return TemplateGet(ctx, q, id)
}

// TemplateVersionGet returns version number of a template; horizon.ErrNotFound when either
// does not exist.
func TemplateVersionGet(ctx context.Context, q Querier, templateID uuid.UUID, number int) (horizon.TemplateVersion, error) {
	v, err := scanVersion(q.QueryRow(ctx, `SELECT `+versionColumns+` FROM template_versions
		WHERE template_id = $1 AND number = $2`, templateID, number))
	if err != nil {
		return v, fmt.Errorf("template %s version %d: %w", templateID, number, translate(err))
	}
	return v, nil
}
