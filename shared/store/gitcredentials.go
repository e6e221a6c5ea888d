package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"horizon/shared/horizon"
)

const gitCredentialColumns = `id, name, url_prefix, kind, username, token, ssh_private_key, ssh_host_key, created_by, created_at`

func scanGitCredential(row pgx.Row) (horizon.GitCredential, error) {
	var g horizon.GitCredential
	err := row.Scan(&g.ID, &g.Name, &g.URLPrefix, &g.Kind, &g.Username, &g.Token, &g.SSHPrivateKey, &g.SSHHostKey, &g.CreatedBy, &g.CreatedAt)
	return g, err
}

// GitCredentialCreate inserts a credential whose secrets are already sealed. A taken name or
// URL prefix is a *horizon.ConflictError.
func GitCredentialCreate(ctx context.Context, q Querier, g horizon.GitCredential) (horizon.GitCredential, error) {
	out, err := scanGitCredential(q.QueryRow(ctx, `INSERT INTO git_credentials
		(name, url_prefix, kind, username, token, ssh_private_key, ssh_host_key, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+gitCredentialColumns,
		g.Name, g.URLPrefix, g.Kind, g.Username, g.Token, g.SSHPrivateKey, g.SSHHostKey, g.CreatedBy))
	return out, translate(err)
}

// GitCredentialGet returns a credential, its secrets still sealed.
func GitCredentialGet(ctx context.Context, q Querier, id uuid.UUID) (horizon.GitCredential, error) {
	g, err := scanGitCredential(q.QueryRow(ctx, `SELECT `+gitCredentialColumns+` FROM git_credentials WHERE id = $1`, id))
	if err != nil {
		return g, fmt.Errorf("git credential %s: %w", id, translate(err))
	}
	return g, nil
}

// GitCredentialList returns one page of credentials, their secrets still sealed.
func GitCredentialList(ctx context.Context, q Querier, p Page) ([]horizon.GitCredential, *uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT `+gitCredentialColumns+` FROM git_credentials
		WHERE ($1::uuid IS NULL OR id > $1) ORDER BY id LIMIT $2`, p.After, p.limit())
	if err != nil {
		return nil, nil, translate(err)
	}
	gs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.GitCredential, error) { return scanGitCredential(r) })
	if err != nil {
		return nil, nil, translate(err)
	}
	gs, next := cut(gs, p, func(g horizon.GitCredential) uuid.UUID { return g.ID })
	return gs, next, nil
}

// GitCredentialsPrefixing returns the credentials whose url_prefix is a prefix of repoURL as
// plain text, longest prefix first. Whether a prefix ends at a boundary of the URL is the
// caller's rule (gitcred.Matches): this only narrows the candidates.
func GitCredentialsPrefixing(ctx context.Context, q Querier, repoURL string) ([]horizon.GitCredential, error) {
	rows, err := q.Query(ctx, `SELECT `+gitCredentialColumns+` FROM git_credentials
		WHERE starts_with($1, url_prefix) ORDER BY length(url_prefix) DESC, id`, repoURL)
	if err != nil {
		return nil, translate(err)
	}
	gs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (horizon.GitCredential, error) { return scanGitCredential(r) })
	return gs, translate(err)
}

// GitCredentialDelete deletes a credential.
func GitCredentialDelete(ctx context.Context, q Querier, id uuid.UUID) error {
	tag, err := q.Exec(ctx, `DELETE FROM git_credentials WHERE id = $1`, id)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("git credential %s: %w", id, horizon.ErrNotFound)
	}
	return nil
}
