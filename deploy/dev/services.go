package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"horizon/shared/redisconn"
)

const (
	defaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	defaultRedis    = "redis://127.0.0.1:6379/0"
	// Ports of the throwaway instances, chosen to stay clear of the defaults.
	throwawayPGPort    = "55432"
	throwawayRedisPort = "56379"
)

// database is the checkout's own database (checkoutName): clones on one machine share its
// Postgres but not their data, which each seals under its own .data/secret.key.
var database = "horizon"

// ensurePostgres returns the URL of the checkout's database on a Postgres that answers.
func ensurePostgres(ctx context.Context, data string, procs *processes) (string, error) {
	if u := os.Getenv("HORIZON_DATABASE_URL"); u != "" {
		return u, nil
	}
	if pgAnswers(ctx, defaultPostgres) {
		fmt.Println("postgres: using the server on 127.0.0.1:5432")
		return createDatabase(ctx, defaultPostgres)
	}
	throwaway := "postgres://postgres@127.0.0.1:" + throwawayPGPort + "/postgres?sslmode=disable"
	if pgAnswers(ctx, throwaway) {
		return createDatabase(ctx, throwaway)
	}
	if initdb, pgctl, ok := postgresBinaries(); ok {
		fmt.Println("postgres: starting a throwaway server in .data/postgres on port " + throwawayPGPort)
		if err := startThrowawayPostgres(ctx, data, initdb, pgctl, procs); err != nil {
			return "", err
		}
		if err := waitFor(ctx, 30*time.Second, func() bool { return pgAnswers(ctx, throwaway) }); err != nil {
			return "", errors.New("postgres: the throwaway server did not come up; see .data/postgres.log")
		}
		return createDatabase(ctx, throwaway)
	}
	if dockerAnswers(ctx) {
		return composeUp(ctx, "postgres", func() bool { return pgAnswers(ctx, defaultPostgres) }, defaultPostgres, true)
	}
	return "", errors.New("postgres: nothing answers on 127.0.0.1:5432, no initdb/pg_ctl is installed " +
		"(apt-get install postgresql), and no Docker engine answers; set HORIZON_DATABASE_URL to use another server")
}

// ensureRedis returns the URL of a Redis that answers.
func ensureRedis(ctx context.Context, data string, procs *processes) (string, error) {
	if u := os.Getenv("HORIZON_REDIS_URL"); u != "" {
		return u, nil
	}
	if redisAnswers(ctx, defaultRedis) {
		fmt.Println("redis: using the server on 127.0.0.1:6379")
		return defaultRedis, nil
	}
	throwaway := "redis://127.0.0.1:" + throwawayRedisPort + "/0"
	if path, err := exec.LookPath("redis-server"); err == nil {
		fmt.Println("redis: starting a throwaway server in .data/redis on port " + throwawayRedisPort)
		dir := filepath.Join(data, "redis")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		// appendonly: queued tasks survive a restart of the throwaway server, as in production.
		if err := procs.start(ctx, "redis", nil, path, "--bind", "127.0.0.1", "--port", throwawayRedisPort,
			"--dir", dir, "--appendonly", "yes", "--save", ""); err != nil {
			return "", err
		}
		if err := waitFor(ctx, 10*time.Second, func() bool { return redisAnswers(ctx, throwaway) }); err != nil {
			return "", errors.New("redis: the throwaway server did not come up")
		}
		return throwaway, nil
	}
	if dockerAnswers(ctx) {
		return composeUp(ctx, "redis", func() bool { return redisAnswers(ctx, defaultRedis) }, defaultRedis, false)
	}
	return "", errors.New("redis: nothing answers on 127.0.0.1:6379, redis-server is not installed " +
		"(apt-get install redis-server), and no Docker engine answers; set HORIZON_REDIS_URL to use another server")
}

func pgAnswers(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return false
	}
	_ = c.Close(ctx) // a probe connection
	return true
}

func redisAnswers(ctx context.Context, url string) bool {
	opts, _, err := redisconn.Parse(url)
	if err != nil {
		return false
	}
	c := opts.NewClient(0)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.Ping(ctx).Err() == nil
}

// createDatabase makes sure the checkout's database exists on the server of adminURL and returns
// its URL.
func createDatabase(ctx context.Context, adminURL string) (string, error) {
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	var exists bool
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, database).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := c.Exec(ctx, "CREATE DATABASE "+database); err != nil {
			return "", fmt.Errorf("create database %s: %w", database, err)
		}
	}
	return strings.Replace(adminURL, "/postgres?", "/"+database+"?", 1), nil
}

// postgresBinaries finds initdb and pg_ctl on PATH or in Debian's versioned directories.
func postgresBinaries() (initdb, pgctl string, ok bool) {
	if i, err := exec.LookPath("initdb"); err == nil {
		if p, err := exec.LookPath("pg_ctl"); err == nil {
			return i, p, true
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		in, pc := filepath.Join(dirs[i], "initdb"), filepath.Join(dirs[i], "pg_ctl")
		if fileExists(in) && fileExists(pc) {
			return in, pc, true
		}
	}
	return "", "", false
}

// startThrowawayPostgres initialises .data/postgres (trust authentication, loopback only) and
// starts it. Postgres refuses to run as root, so as root it runs as the postgres user.
func startThrowawayPostgres(ctx context.Context, data, initdb, pgctl string, procs *processes) error {
	dir := filepath.Join(data, "postgres")
	asUser := func(bin string, args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			return exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
		}
		return exec.CommandContext(ctx, bin, args...)
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return errors.New("postgres: running as root and there is no postgres user to run a throwaway server as")
		}
	}
	if !fileExists(filepath.Join(dir, "PG_VERSION")) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if out, err := exec.CommandContext(ctx, "chown", "-R", "postgres", dir, data).CombinedOutput(); err != nil {
				return fmt.Errorf("chown %s: %v: %s", dir, err, out)
			}
		}
		if out, err := asUser(initdb, "-D", dir, "-U", "postgres", "--auth=trust").CombinedOutput(); err != nil {
			return fmt.Errorf("initdb: %v: %s", err, out)
		}
	}
	cmd := asUser(pgctl, "-D", dir, "-l", filepath.Join(data, "postgres.log"), "-w",
		"-o", "-p "+throwawayPGPort+" -k "+dir+" -c listen_addresses=127.0.0.1", "start")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	procs.onStop(func() {
		_ = asUser(pgctl, "-D", dir, "-m", "fast", "stop").Run() // best effort on the way out
	})
	return nil
}

func dockerAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

// composeUp starts one service of docker-compose.yml and waits until it answers.
func composeUp(ctx context.Context, service string, answers func() bool, url string, isPG bool) (string, error) {
	fmt.Printf("%s: starting it with docker compose\n", service)
	if out, err := exec.CommandContext(ctx, "docker", "compose", "-f", "docker-compose.yml", "-f", "deploy/compose.dev.yml", "up", "-d", service).CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker compose up %s: %v: %s", service, err, out)
	}
	if err := waitFor(ctx, 60*time.Second, answers); err != nil {
		return "", fmt.Errorf("%s: the container did not come up", service)
	}
	if isPG {
		return createDatabase(ctx, url)
	}
	return url, nil
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
