package testkit

import (
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/secrets"
	"horizon/shared/tfstate"
)

// States is Horizon's Terraform state backend over a fresh database of its own, as a worker
// serves it, stopped on cleanup.
type States struct {
	*tfstate.Server
	DB  *pgxpool.Pool
	Box *secrets.Box
}

// NewStates starts a state backend on a fresh database, sealing with a fixed test key.
func NewStates(t testing.TB) States {
	t.Helper()
	db := DB(t)
	box, err := secrets.NewBox([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tfstate.Start(db, box, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return States{Server: srv, DB: db, Box: box}
}
