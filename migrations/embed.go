// Package migrations embeds Horizon's numbered SQL migrations. Both processes apply them at
// start-up (store.Migrate) under a Postgres session lock, so replicas starting together apply
// each migration exactly once. A migration is never edited once merged: add a new file instead.
package migrations

import "embed"

// FS holds every *.sql migration, in goose format, at its root.
//
//go:embed *.sql
var FS embed.FS
