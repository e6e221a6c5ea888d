package tfstate_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/secrets"
	"horizon/shared/testkit"
	"horizon/shared/tfstate"
)

const secret = "Zq7tStateSecret4815162342"

func start(t *testing.T) (*tfstate.Server, *pgxpool.Pool, *secrets.Box) {
	t.Helper()
	s := testkit.NewStates(t)
	return s.Server, s.DB, s.Box
}

// call makes the request Terraform's http backend would make with a grant's environment.
func call(t *testing.T, env map[string]string, method, address, body string) (int, string) {
	t.Helper()
	if address == "" {
		address = env["TF_HTTP_ADDRESS"]
	}
	req, err := http.NewRequest(method, address, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(env["TF_HTTP_USERNAME"], env["TF_HTTP_PASSWORD"])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func stateWith(value string) string {
	return `{"version":4,"serial":1,"outputs":{"password":{"value":"` + value + `","type":"string","sensitive":true}},"resources":[]}`
}

// TestStateIsSealedAtRest: what Terraform saves is served back as saved, and no table holds it
// in clear; a sealed state moved to another workspace's row does not open.
func TestStateIsSealedAtRest(t *testing.T) {
	t.Parallel()
	s, db, _ := start(t)
	env, revoke := s.Grant("s1-vm-0")
	defer revoke()
	if code, _ := call(t, env, http.MethodGet, "", ""); code != http.StatusNotFound {
		t.Fatalf("a workspace without state answers %d, want 404 (Terraform's \"no state yet\")", code)
	}
	if code, body := call(t, env, http.MethodPost, "", stateWith(secret)); code != http.StatusOK {
		t.Fatalf("save: %d %s", code, body)
	}
	if code, body := call(t, env, http.MethodGet, "", ""); code != http.StatusOK || body != stateWith(secret) {
		t.Fatalf("read back: %d %s", code, body)
	}
	if found := testkit.TablesHolding(t, db, secret); len(found) > 0 {
		t.Fatalf("the state's secret is stored in clear in %v", found)
	}
	ctx := context.Background()
	if _, err := db.Exec(ctx, `INSERT INTO terraform_states (workspace, state) SELECT 's2-vm-0', state FROM terraform_states WHERE workspace = 's1-vm-0'`); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Read(ctx, "s2-vm-0"); err == nil {
		t.Fatalf("another workspace's sealed state opened: %s", got)
	}
}

// TestCredentialsAreOneWorkspacesUntilRevoked: a grant opens its own workspace only, and
// nothing once revoked; a request without credentials gets nothing.
func TestCredentialsAreOneWorkspacesUntilRevoked(t *testing.T) {
	t.Parallel()
	s, _, _ := start(t)
	mine, revokeMine := s.Grant("s1-vm-0")
	theirs, revokeTheirs := s.Grant("s2-vm-0")
	defer revokeTheirs()
	if code, body := call(t, theirs, http.MethodPost, "", stateWith(secret)); code != http.StatusOK {
		t.Fatalf("save: %d %s", code, body)
	}
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete, "LOCK"} {
		if code, _ := call(t, mine, method, theirs["TF_HTTP_ADDRESS"], `{"ID":"x"}`); code != http.StatusUnauthorized {
			t.Errorf("%s of another workspace with my credentials: %d, want 401", method, code)
		}
	}
	if code, _ := call(t, map[string]string{}, http.MethodGet, theirs["TF_HTTP_ADDRESS"], ""); code != http.StatusUnauthorized {
		t.Errorf("a request without credentials: %d, want 401", code)
	}
	revokeMine()
	if code, _ := call(t, mine, http.MethodGet, "", ""); code != http.StatusUnauthorized {
		t.Errorf("revoked credentials: %d, want 401", code)
	}
}

// TestLockIsExclusiveAndDiesWithItsRun: a second run is told who holds the lock (423, which
// Terraform retries until its -lock-timeout); a run that ends without unlocking — Terraform
// killed, its work dir closed — leaves no lock behind; a save naming a lock it does not hold is
// refused.
func TestLockIsExclusiveAndDiesWithItsRun(t *testing.T) {
	t.Parallel()
	s, _, _ := start(t)
	first, revokeFirst := s.Grant("s1-vm-0")
	second, revokeSecond := s.Grant("s1-vm-0")
	defer revokeSecond()
	if code, body := call(t, first, "LOCK", "", `{"ID":"lock-1","Who":"first"}`); code != http.StatusOK {
		t.Fatalf("lock: %d %s", code, body)
	}
	code, body := call(t, second, "LOCK", "", `{"ID":"lock-2","Who":"second"}`)
	if code != http.StatusLocked || !strings.Contains(body, `"lock-1"`) {
		t.Fatalf("a second lock: %d %s, want 423 naming the holder", code, body)
	}
	if code, _ := call(t, second, http.MethodPost, second["TF_HTTP_ADDRESS"]+"?ID=lock-1", stateWith("x")); code != http.StatusConflict {
		t.Fatalf("a save under another run's lock: %d, want 409", code)
	}
	revokeFirst() // the first run is gone without unlocking
	if code, body := call(t, second, "LOCK", "", `{"ID":"lock-2","Who":"second"}`); code != http.StatusOK {
		t.Fatalf("lock after the holder's run ended: %d %s", code, body)
	}
	if code, body := call(t, second, "UNLOCK", "", `{"ID":"lock-2"}`); code != http.StatusOK {
		t.Fatalf("unlock: %d %s", code, body)
	}
}

// TestDeleteRefusesAStateThatTracksResources: as Terraform refuses to delete a workspace that
// still tracks resources, so does the backend.
func TestDeleteRefusesAStateThatTracksResources(t *testing.T) {
	t.Parallel()
	s, _, _ := start(t)
	env, revoke := s.Grant("s1-vm-0")
	defer revoke()
	tracked := `{"version":4,"resources":[{"type":"terraform_data","name":"vm","instances":[{"attributes":{}}]}]}`
	if code, body := call(t, env, http.MethodPost, "", tracked); code != http.StatusOK {
		t.Fatalf("save: %d %s", code, body)
	}
	ctx := context.Background()
	if err := s.Delete(ctx, "s1-vm-0"); err == nil || !strings.Contains(err.Error(), "1 resource instances") {
		t.Fatalf("delete of a state with a resource: %v", err)
	}
	if code, body := call(t, env, http.MethodPost, "", stateWith("x")); code != http.StatusOK {
		t.Fatalf("save: %d %s", code, body)
	}
	if err := s.Delete(ctx, "s1-vm-0"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Read(ctx, "s1-vm-0"); err != nil || got != nil {
		t.Fatalf("after delete: %s, %v", got, err)
	}
}

// TestMigratePGSealsAndDropsThePlaintextStates: states the pg backend left in clear move into
// sealed storage, readable as before, and the pg backend's tables are gone; a second start
// finds nothing to do.
func TestMigratePGSealsAndDropsThePlaintextStates(t *testing.T) {
	t.Parallel()
	s, db, box := start(t)
	ctx := context.Background()
	// The pg backend's own schema (terraform/internal/backend/remote-state/pg).
	if _, err := db.Exec(ctx, `
		CREATE SCHEMA terraform;
		CREATE SEQUENCE public.global_states_id_seq AS bigint;
		CREATE TABLE terraform.states (id bigint NOT NULL DEFAULT nextval('public.global_states_id_seq') PRIMARY KEY, name text UNIQUE, data text);`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO terraform.states (name, data) VALUES ('default', ''), ('s7-vm-0', $1)`, stateWith(secret)); err != nil {
		t.Fatal(err)
	}
	if n, err := tfstate.MigratePG(ctx, db, box, tfstate.PGSchema); err != nil || n != 1 {
		t.Fatalf("MigratePG = %d, %v; want 1 state moved", n, err)
	}
	got, err := s.Read(ctx, "s7-vm-0")
	if err != nil || !bytes.Equal(got, []byte(stateWith(secret))) {
		t.Fatalf("the moved state reads %s, %v", got, err)
	}
	if found := testkit.TablesHolding(t, db, secret); len(found) > 0 {
		t.Fatalf("a plaintext state is left in %v", found)
	}
	var left bool
	if err := db.QueryRow(ctx, `SELECT to_regclass('terraform.states') IS NOT NULL OR to_regclass('public.global_states_id_seq') IS NOT NULL`).Scan(&left); err != nil || left {
		t.Fatalf("the pg backend's tables are still there (%v)", err)
	}
	if n, err := tfstate.MigratePG(ctx, db, box, tfstate.PGSchema); err != nil || n != 0 {
		t.Fatalf("a second MigratePG = %d, %v; want nothing to do", n, err)
	}
}

// TestBadRequestsChangeNothing: a body that is not a state, or a lock request that is not
// Terraform's lock description, is refused (400) and the saved state stays as it was.
func TestBadRequestsChangeNothing(t *testing.T) {
	t.Parallel()
	s, _, _ := start(t)
	env, revoke := s.Grant("s1-vm-0")
	defer revoke()
	if code, body := call(t, env, http.MethodPost, "", stateWith(secret)); code != http.StatusOK {
		t.Fatalf("save: %d %s", code, body)
	}
	if code, _ := call(t, env, http.MethodPost, "", `{"version":4, truncated`); code != http.StatusBadRequest {
		t.Fatalf("a save that is not JSON: %d, want 400", code)
	}
	for _, body := range []string{"", "{}", `{"ID":""}`, "not json"} {
		if code, _ := call(t, env, "LOCK", "", body); code != http.StatusBadRequest {
			t.Errorf("LOCK with %q: %d, want 400", body, code)
		}
	}
	if code, body := call(t, env, http.MethodGet, "", ""); code != http.StatusOK || body != stateWith(secret) {
		t.Fatalf("the state after bad requests: %d %s", code, body)
	}
}

// TestLockLostWithItsSessionIsRetakenOrFenced: a Postgres failover ends the session that held
// a workspace's lock (here the session is terminated, as the old primary's death would end
// it). The run that held it saves its state all the same — the lock is taken again on the new
// session — unless another run took the lock meanwhile: then the save is refused and the state
// stays the other run's.
func TestLockLostWithItsSessionIsRetakenOrFenced(t *testing.T) {
	t.Parallel()
	s, db, _ := start(t)
	ctx := context.Background()
	dropLockSessions := func() {
		t.Helper()
		if _, err := db.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil {
			t.Fatal(err)
		}
	}
	first, revokeFirst := s.Grant("s1-vm-0")
	defer revokeFirst()
	second, revokeSecond := s.Grant("s1-vm-0")
	defer revokeSecond()

	if code, body := call(t, first, "LOCK", "", `{"ID":"lock-1"}`); code != http.StatusOK {
		t.Fatalf("lock: %d %s", code, body)
	}
	dropLockSessions()
	if code, body := call(t, first, http.MethodPost, first["TF_HTTP_ADDRESS"]+"?ID=lock-1", stateWith("one")); code != http.StatusOK {
		t.Fatalf("save after the lock's session ended: %d %s, want 200 (the lock taken again)", code, body)
	}
	if code, body := call(t, second, "LOCK", "", `{"ID":"lock-2"}`); code != http.StatusLocked {
		t.Fatalf("another run's lock after the first took it again: %d %s, want 423", code, body)
	}

	dropLockSessions()
	if code, body := call(t, second, "LOCK", "", `{"ID":"lock-2"}`); code != http.StatusOK {
		t.Fatalf("another run's lock once the first's session ended: %d %s", code, body)
	}
	if code, body := call(t, first, http.MethodPost, first["TF_HTTP_ADDRESS"]+"?ID=lock-1", stateWith("stale")); code != http.StatusConflict {
		t.Fatalf("save under a lock another run took: %d %s, want 409", code, body)
	}
	if got, err := s.Read(ctx, "s1-vm-0"); err != nil || string(got) != stateWith("one") {
		t.Fatalf("state after the refused save: %s, %v; want the first save's", got, err)
	}
}
