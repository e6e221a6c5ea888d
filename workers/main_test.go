package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"horizon/shared/terraform"
	"horizon/shared/testkit"
)

// TestWorkersServeTheirHealth runs the workers as the process a supervisor runs: /healthz and
// /readyz answer 200 while Postgres and Redis do; with Redis cut, /healthz answers 503 (the
// supervisor restarts the worker), with Postgres cut /readyz does; both recover once the
// dependency is back. The workers used to have no listener at all.
func TestWorkersServeTheirHealth(t *testing.T) {
	t.Parallel()
	bin := buildWorkers(t)
	tf, err := terraform.FindBinary(context.Background(), os.Getenv("HORIZON_TERRAFORM_BIN"))
	if err != nil {
		t.Fatal(err)
	}
	db := testkit.DB(t)
	rdb, ns := testkit.Redis(t)
	cfg := db.Config().ConnConfig
	pg := testkit.NewProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	rd := testkit.NewProxy(t, rdb.Options().Addr)
	dbURL := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: pg.Addr(), Path: "/" + cfg.Database, RawQuery: "sslmode=disable"}
	redisURL, _ := url.Parse(testkit.RedisURL())
	redisURL.Host = rd.Addr()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	proc := exec.Command(bin)
	proc.Env = append(os.Environ(), "HORIZON_DATABASE_URL="+dbURL.String(), "HORIZON_REDIS_URL="+redisURL.String(), "HORIZON_NAMESPACE="+ns,
		"HORIZON_SECRET_KEY="+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)), "HORIZON_WORKERS_LISTEN="+addr,
		"HORIZON_TERRAFORM_BIN="+tf.Path, "HORIZON_GIT_CACHE_DIR="+t.TempDir(), "HORIZON_WORK_DIR="+t.TempDir(), "HORIZON_LOG_FORMAT=text")
	var out bytes.Buffer
	proc.Stdout, proc.Stderr = &out, &out
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
	status := func(path string) int {
		r, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0
		}
		_ = r.Body.Close()
		return r.StatusCode
	}
	want := func(path string, code int, why string) {
		t.Helper()
		testkit.Eventually(t, 45*time.Second, why, func() bool { return status(path) == code })
	}
	want("/healthz", 200, "the workers did not become healthy")
	want("/readyz", 200, "the workers did not become ready")

	rd.Cut()
	want("/healthz", 503, "the workers stay healthy without Redis")
	rd.Restore()
	want("/healthz", 200, "the workers did not recover with Redis back")

	pg.Cut()
	want("/readyz", 503, "the workers stay ready without Postgres")
	pg.Restore()
	want("/readyz", 200, "the workers did not get ready again with Postgres back")
}

func buildWorkers(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "workers")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the workers: %v\n%s", err, out)
	}
	return bin
}

// TestOperatorReadsAndRepairsAState: in an emergency an operator reads a sealed state and
// writes a repaired one back with the workers' binary; the write waits for no run, it refuses
// while one holds the workspace's lock.
func TestOperatorReadsAndRepairsAState(t *testing.T) {
	t.Parallel()
	bin := buildWorkers(t)
	db := testkit.DB(t)
	state := `{"version":4,"serial":7,"lineage":"l","outputs":{"token":{"value":"OperatorSecret9731","type":"string","sensitive":true}},"resources":[]}`
	run := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "HORIZON_DATABASE_URL="+db.Config().ConnString(), "HORIZON_REDIS_URL="+testkit.RedisURL(),
			"HORIZON_SECRET_KEY="+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		return string(out), err
	}
	const ws = "s0190c2a8-0000-7000-8000-000000000001-vm-0"
	if _, err := run("", "state", "show", ws); err == nil {
		t.Fatal("show of a workspace without state succeeded")
	}
	if _, err := run(state, "state", "push", ws); err != nil {
		t.Fatalf("push: %v", err)
	}
	if found := testkit.TablesHolding(t, db, "OperatorSecret9731"); len(found) > 0 {
		t.Fatalf("the pushed state is stored in clear in %v", found)
	}
	if got, err := run("", "state", "show", ws); err != nil || got != state {
		t.Fatalf("show: %q, %v", got, err)
	}
	// A run holds the workspace's lock (as the state backend takes it for Terraform).
	ctx := context.Background()
	conn, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, "horizon-tfstate:"+ws); err != nil {
		t.Fatal(err)
	}
	if _, err := run(`{"version":4}`, "state", "push", ws); err == nil {
		t.Fatal("a push while a run holds the lock succeeded")
	}
	if got, _ := run("", "state", "show", ws); got != state {
		t.Fatalf("the refused push changed the state: %s", got)
	}
}
