package testkit

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Postgres is one Postgres server of the test's own (the primary of a PostgresPair without
// the standby), on a loopback port, stopped when the test ends: a test that restarts the
// server must not share it with the rest of the machine. Its methods return errors instead of
// failing the test, so that a fault injector may call them from its own goroutine.
type Postgres struct {
	p   *PostgresPair
	log string
}

// StartPostgres initialises and starts the server and creates database db on it.
func StartPostgres(t testing.TB, db string) *Postgres {
	t.Helper()
	p := &PostgresPair{t: t, bin: pgBinDir(t), Ports: [2]int{FreePort(t), 0}}
	root, err := os.MkdirTemp("", "hz-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if os.Geteuid() == 0 { // Postgres refuses to run as root (see StartPostgresPair)
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, a private Postgres needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	p.dirs[0] = filepath.Join(root, "data")
	s := &Postgres{p: p, log: filepath.Join(root, "server.log")}
	p.run("initdb", "-D", p.dirs[0], "-U", "postgres", "--auth=trust", "--no-sync")
	p.configure(0)
	// The pair's 60 connections are for two API pools; an API and several workers processes
	// with their pools, and the test's own, need more. A later line wins in postgresql.conf.
	f, err := os.OpenFile(filepath.Join(p.dirs[0], "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("max_connections = 200\n")
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	p.run("pg_ctl", "-D", p.dirs[0], "-l", s.log, "-w", "start")
	t.Cleanup(func() { p.stop(0) })
	p.exec(0, "postgres", `CREATE DATABASE `+pgx.Identifier{db}.Sanitize())
	return s
}

// URL is database db's URL.
func (s *Postgres) URL(db string) string { return s.p.NodeURL(0, db) }

// Restart restarts the server: mode "fast" is an operator's restart (sessions terminated, a
// shutdown checkpoint), "immediate" a crash (no checkpoint; recovery replays the WAL at start).
// It returns once the server takes connections again.
func (s *Postgres) Restart(mode string) error {
	out, err := s.p.command("pg_ctl", "-D", s.p.dirs[0], "-l", s.log, "-m", mode, "-w", "-t", "60", "restart").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl restart -m %s: %v: %s", mode, err, out)
	}
	return nil
}

// RedisServer is one redis-server of the test's own, configured as deploy/README.md says
// production's is (appendonly yes, appendfsync everysec, maxmemory-policy noeviction), on a
// loopback port, killed when the test ends. A test may crash it (Kill) or stop it (Shutdown)
// and Start it again on the same port and data directory. Its methods return errors instead of
// failing the test, for a fault injector's goroutine.
type RedisServer struct {
	bin  string
	dir  string
	port int

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartRedis starts the server and returns once it answers.
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	r := &RedisServer{bin: redisBinary(t, "redis-server"), dir: t.TempDir(), port: FreePort(t)}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	return r
}

// URL is the server's HORIZON_REDIS_URL.
func (r *RedisServer) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// Start starts the server (again), on its port and data directory, and waits until it answers
// (after loading its append-only file).
func (r *RedisServer) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return fmt.Errorf("redis on port %d is already running", r.port)
	}
	cmd := exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir, "--save", "",
		"--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction", "--daemonize", "no")
	logf, err := os.OpenFile(filepath.Join(r.dir, "redis.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", r.bin, err)
	}
	go func() { _ = cmd.Wait(); _ = logf.Close() }()
	r.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))})
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := c.Ping(ctx).Err() // LOADING while it replays the append-only file
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis on port %d did not answer after a start: %w", r.port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill SIGKILLs the server, as a crash: what the append-only file had not synced (up to a
// second, with everysec) is lost.
func (r *RedisServer) Kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return nil
	}
	err := r.cmd.Process.Signal(syscall.SIGKILL)
	r.waitExit()
	return err
}

// Shutdown stops the server as an operator's restart does (SIGTERM: the append-only file is
// flushed and synced, clients are disconnected).
func (r *RedisServer) Shutdown() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return nil
	}
	err := r.cmd.Process.Signal(syscall.SIGTERM)
	r.waitExit()
	return err
}

// waitExit waits, with r.mu held, until the process is gone and its port free.
func (r *RedisServer) waitExit() {
	pid := r.cmd.Process.Pid
	r.cmd = nil
	for range 600 {
		// The Wait goroutine reaps it; until then signal 0 still finds the zombie.
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
