package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"horizon/shared/horizon"
)

// conflictFields maps unique constraints to the request field they are about, so that a 409 can
// say which value is taken.
var conflictFields = map[string]string{
	"teams_name_key":                    "name",
	"users_email_key":                   "email",
	"networks_name_key":                 "name",
	"addresses_name_key":                "name",
	"addresses_ip_key":                  "ip",
	"address_attachments_pkey":          "address_id",
	"address_attachments_execution_key": "execution_id",
	"environments_name_key":             "name",
	"ssh_keys_name_key":                 "name",
	"ssh_keys_fingerprint_key":          "public_key",
	"nagios_servers_name_key":           "name",
	"api_tokens_hash_key":               "token",
	"proxmox_servers_name_key":          "name",
	"templates_name_key":                "name",
	"iso_templates_name_key":            "name",
	"git_credentials_name_key":          "name",
	"git_credentials_url_prefix_key":    "url_prefix",
}

// translate turns driver errors into the domain vocabulary. It is applied to every error a store
// function returns.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", horizon.ErrNotFound, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505", "23P01": // unique_violation, exclusion_violation
			return fmt.Errorf("%w: %w", &horizon.ConflictError{Constraint: pe.ConstraintName, Field: conflictFields[pe.ConstraintName]}, err)
		case "23503": // foreign_key_violation: the referenced object is gone or still in use
			return fmt.Errorf("%w: %s: %w", horizon.ErrConflict, pe.ConstraintName, err)
		}
	}
	return err
}

// deleteByID deletes the row id of table: horizon.ErrNotFound when there is none, ErrConflict
// when a row elsewhere still refers to it. noun names the object in the error.
func deleteByID(ctx context.Context, q Querier, table, noun string, id uuid.UUID) error {
	tag, err := q.Exec(ctx, `DELETE FROM `+table+` WHERE id = $1`, id)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s %s: %w", noun, id, horizon.ErrNotFound)
	}
	return nil
}
