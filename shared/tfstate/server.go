package tfstate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"horizon/shared/horizon"
	"horizon/shared/secrets"
	"horizon/shared/terraform"
)

// maxState bounds a state Terraform saves: far above any machine's, low enough that a runaway
// module cannot fill the worker's memory.
const maxState = 64 << 20

// Server is the http state backend of one worker process. It is safe for concurrent use.
type Server struct {
	db   *pgxpool.Pool
	box  *secrets.Box
	log  *slog.Logger
	base string // http://127.0.0.1:port
	srv  *http.Server

	mu     sync.Mutex
	grants map[string]*grant // by user name
}

// grant is one work dir's right to one workspace.
type grant struct {
	workspace string
	password  [sha256.Size]byte // SHA-256 of the password
	locks     map[string]*pgx.Conn
	revoked   bool // set under Server.mu: a lock taken after this is released at once
}

// Start listens on a free loopback port and serves until Close.
func Start(db *pgxpool.Pool, box *secrets.Box, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("state backend: %w", err)
	}
	s := &Server{db: db, box: box, log: log, base: "http://" + ln.Addr().String(), grants: map[string]*grant{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("state backend stopped", "error", err)
		}
	}()
	return s, nil
}

// Close stops serving and releases every lock still held.
func (s *Server) Close() error {
	err := s.srv.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for user, g := range s.grants {
		g.revoked = true
		s.release(g)
		delete(s.grants, user)
	}
	return err
}

// Grant returns the environment that points Terraform's http backend at workspace, with
// credentials valid for it alone, and the function that revokes them (and releases a lock a
// killed Terraform left). Call revoke once the work dir is done with.
func (s *Server) Grant(workspace string) (env map[string]string, revoke func()) {
	user, password := randomHex(), randomHex()
	g := &grant{workspace: workspace, password: sha256.Sum256([]byte(password)), locks: map[string]*pgx.Conn{}}
	s.mu.Lock()
	s.grants[user] = g
	s.mu.Unlock()
	address := s.base + "/states/" + workspace
	env = map[string]string{
		"TF_HTTP_ADDRESS":        address,
		"TF_HTTP_LOCK_ADDRESS":   address,
		"TF_HTTP_UNLOCK_ADDRESS": address,
		"TF_HTTP_USERNAME":       user,
		"TF_HTTP_PASSWORD":       password,
	}
	return env, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		g.revoked = true
		s.release(g)
		delete(s.grants, user)
	}
}

// release closes the connections holding g's locks, which releases them, and clears what a
// second run would be told about them. Called with s.mu held.
func (s *Server) release(g *grant) {
	for id, conn := range g.locks {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := s.db.Exec(ctx, `UPDATE terraform_states SET lock_info = NULL WHERE workspace = $1`, g.workspace); err != nil {
			s.log.Warn("state backend: could not clear a released lock's description", "workspace", g.workspace, "error", err)
		}
		unlockAndClose(ctx, conn)
		cancel()
		delete(g.locks, id)
	}
}

func randomHex() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand does not fail on supported platforms
	return hex.EncodeToString(b)
}

// ServeHTTP answers Terraform's http backend: GET (read), POST (save), DELETE, LOCK and UNLOCK
// on /states/<workspace>.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	workspace, ok := strings.CutPrefix(r.URL.Path, "/states/")
	if !ok || workspace == "" || strings.Contains(workspace, "/") {
		http.NotFound(w, r)
		return
	}
	g := s.authorize(r, workspace)
	if g == nil {
		http.Error(w, "no credentials for this workspace", http.StatusUnauthorized)
		return
	}
	ctx := r.Context()
	var err error
	switch r.Method {
	case http.MethodGet:
		err = s.get(ctx, w, workspace)
	case http.MethodPost:
		err = s.save(ctx, w, r, g)
	case http.MethodDelete:
		_, err = s.db.Exec(ctx, `DELETE FROM terraform_states WHERE workspace = $1`, workspace)
	case "LOCK":
		err = s.lock(ctx, w, r, g)
	case "UNLOCK":
		err = s.unlock(ctx, w, r, g)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err != nil {
		var he httpError
		if errors.As(err, &he) {
			http.Error(w, he.msg, he.status)
			return
		}
		s.log.Error("state backend", "workspace", workspace, "method", r.Method, "error", err)
		http.Error(w, "the state database failed; see the worker's log", http.StatusServiceUnavailable)
	}
}

type httpError struct {
	status int
	msg    string
}

func (e httpError) Error() string { return e.msg }

// authorize returns the grant the request's credentials name, if they are right and for
// workspace.
func (s *Server) authorize(r *http.Request, workspace string) *grant {
	user, password, ok := r.BasicAuth()
	if !ok {
		return nil
	}
	s.mu.Lock()
	g := s.grants[user]
	s.mu.Unlock()
	sum := sha256.Sum256([]byte(password))
	if g == nil || g.workspace != workspace || subtle.ConstantTimeCompare(sum[:], g.password[:]) != 1 {
		return nil
	}
	return g
}

func (s *Server) get(ctx context.Context, w http.ResponseWriter, workspace string) error {
	state, err := s.Read(ctx, workspace)
	if err != nil {
		return err
	}
	if state == nil {
		w.WriteHeader(http.StatusNotFound) // Terraform's "no state yet"
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	_, err = w.Write(state)
	return err
}

func (s *Server) save(ctx context.Context, w http.ResponseWriter, r *http.Request, g *grant) error {
	if id := r.URL.Query().Get("ID"); id != "" {
		if err := s.ensureLock(ctx, g, id); err != nil {
			return err
		}
	}
	state, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxState))
	if err != nil {
		return httpError{http.StatusRequestEntityTooLarge, "state too large"}
	}
	if !json.Valid(state) {
		return httpError{http.StatusBadRequest, "the state is not JSON"}
	}
	_, err = s.db.Exec(ctx, `INSERT INTO terraform_states (workspace, state) VALUES ($1, $2)
		ON CONFLICT (workspace) DO UPDATE SET state = EXCLUDED.state, updated_at = now()`,
		g.workspace, s.box.Seal(purpose(g.workspace), state))
	return err
}

// ensureLock checks, before a save under lock id, that the workspace's advisory lock is still
// held on the primary: a lock lives in its session, and a Postgres failover ends the session
// (or leaves it on a server that is now read only), so the lock Terraform believes it holds may
// be gone. Then it is taken again on a new connection, which goes to the new primary, unless
// another run took it meanwhile: that save is refused (409), and the run that holds the lock
// is the one that writes.
func (s *Server) ensureLock(ctx context.Context, g *grant, id string) error {
	s.mu.Lock()
	conn, ok := g.locks[id]
	s.mu.Unlock()
	if !ok {
		return httpError{http.StatusConflict, "the lock " + id + " is not held by this run"}
	}
	var held bool
	err := conn.QueryRow(ctx, `SELECT current_setting('transaction_read_only') = 'off' AND EXISTS (SELECT 1 FROM pg_locks
		WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted)`).Scan(&held)
	if err == nil && held {
		return nil
	}
	_ = conn.Close(ctx) // a session on a server that failed over: whatever it held is moot
	fresh, err := pgx.ConnectConfig(ctx, s.db.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	var got bool
	if err := fresh.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, lockKey(g.workspace)).Scan(&got); err != nil || !got {
		_ = fresh.Close(ctx)
		if err != nil {
			return err
		}
		s.mu.Lock()
		delete(g.locks, id)
		s.mu.Unlock()
		return httpError{http.StatusConflict, "the lock " + id + " was lost in a database failover and another run holds it now"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.revoked || g.locks[id] != conn {
		_ = fresh.Close(ctx)
		return httpError{http.StatusConflict, "the lock " + id + " is not held by this run"}
	}
	g.locks[id] = fresh
	s.log.Warn("state backend: the workspace's lock was lost with its database session; took it again", "workspace", g.workspace)
	return nil
}

// lockInfo is the part of Terraform's lock description the backend reads.
type lockInfo struct {
	ID string `json:"ID"`
}

func (s *Server) lock(ctx context.Context, w http.ResponseWriter, r *http.Request, g *grant) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	var info lockInfo
	if err != nil || json.Unmarshal(body, &info) != nil || info.ID == "" {
		return httpError{http.StatusBadRequest, "the lock request is not Terraform's lock description"}
	}
	conn, err := pgx.ConnectConfig(ctx, s.db.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, lockKey(g.workspace)).Scan(&got); err != nil {
		_ = conn.Close(ctx)
		return err
	}
	if !got {
		_ = conn.Close(ctx)
		// Terraform retries until its -lock-timeout on 423, and shows the holder it is given.
		var held []byte
		err := s.db.QueryRow(ctx, `SELECT lock_info FROM terraform_states WHERE workspace = $1`, g.workspace).Scan(&held)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if held == nil {
			held = []byte(`{"ID":"unknown","Info":"held by another run"}`)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusLocked)
		_, err = w.Write(held)
		return err
	}
	if _, err := s.db.Exec(ctx, `INSERT INTO terraform_states (workspace, lock_info) VALUES ($1, $2)
		ON CONFLICT (workspace) DO UPDATE SET lock_info = EXCLUDED.lock_info`, g.workspace, body); err != nil {
		_ = conn.Close(ctx)
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.revoked { // while locking: the run is gone
		_ = conn.Close(ctx)
		return httpError{http.StatusUnauthorized, "credentials revoked"}
	}
	g.locks[info.ID] = conn
	return nil
}

func (s *Server) unlock(ctx context.Context, w http.ResponseWriter, r *http.Request, g *grant) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	var info lockInfo
	if err != nil || json.Unmarshal(body, &info) != nil {
		return httpError{http.StatusBadRequest, "the unlock request is not Terraform's lock description"}
	}
	s.mu.Lock()
	conn, ok := g.locks[info.ID]
	delete(g.locks, info.ID)
	s.mu.Unlock()
	if !ok {
		return httpError{http.StatusConflict, "the lock " + info.ID + " is not held by this run"}
	}
	defer unlockAndClose(ctx, conn)
	_, err = s.db.Exec(ctx, `UPDATE terraform_states SET lock_info = NULL WHERE workspace = $1`, g.workspace)
	return err
}

// unlockAndClose releases the advisory lock conn's session holds, then closes it. Closing alone
// releases it too, but only once the server's backend has seen the session end, after Close
// has returned: a lock asked for at once could still find it held.
func unlockAndClose(ctx context.Context, conn *pgx.Conn) {
	_, _ = conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`) // a broken session holds nothing
	_ = conn.Close(ctx)
}

// Read returns a workspace's state, opened, or nil when it has none.
func (s *Server) Read(ctx context.Context, workspace string) ([]byte, error) {
	return Read(ctx, s.db, s.box, workspace)
}

// Read returns a workspace's state, opened, or nil when it has none.
func Read(ctx context.Context, db *pgxpool.Pool, box *secrets.Box, workspace string) ([]byte, error) {
	var sealed []byte
	err := db.QueryRow(ctx, `SELECT state FROM terraform_states WHERE workspace = $1`, workspace).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && sealed == nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	state, err := box.Open(purpose(workspace), sealed)
	if err != nil {
		return nil, fmt.Errorf("state of %s: %w", workspace, err)
	}
	return state, nil
}

// Delete removes a workspace's state once it tracks nothing (after a destroy), and refuses
// while it still tracks resources, as Terraform refuses to delete such a workspace.
func (s *Server) Delete(ctx context.Context, workspace string) error {
	state, err := s.Read(ctx, workspace)
	if err != nil {
		return err
	}
	n, err := terraform.TrackedInstances(state)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", workspace, err)
	}
	if n > 0 {
		return fmt.Errorf("workspace %s still tracks %d resource instances", workspace, n)
	}
	_, err = s.db.Exec(ctx, `DELETE FROM terraform_states WHERE workspace = $1`, workspace)
	return err
}

func purpose(workspace string) string { return horizon.PurposeTerraformState + ":" + workspace }

func lockKey(workspace string) string { return "horizon-tfstate:" + workspace }

// Write replaces a workspace's state, for an operator repairing one by hand: it refuses while
// a run holds the workspace's lock, and holds the lock itself while it writes.
func Write(ctx context.Context, db *pgxpool.Pool, box *secrets.Box, workspace string, state []byte) error {
	if !json.Valid(state) {
		return errors.New("the state is not JSON")
	}
	conn, err := db.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, lockKey(workspace)).Scan(&got); err != nil {
		return err
	}
	if !got {
		return fmt.Errorf("workspace %s is locked by a run; try again once it ends", workspace)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, lockKey(workspace)) //nolint:errcheck // the session's end releases it too
	_, err = conn.Exec(ctx, `INSERT INTO terraform_states (workspace, state) VALUES ($1, $2)
		ON CONFLICT (workspace) DO UPDATE SET state = EXCLUDED.state, updated_at = now()`, workspace, box.Seal(purpose(workspace), state))
	return err
}
