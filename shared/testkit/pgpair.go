package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresPair is a Postgres primary and a streaming standby made from it with pg_basebackup,
// replicating synchronously (a commit is acknowledged once the standby has it), real servers
// on loopback ports of their own, stopped when the test ends. Binaries come from
// HORIZON_TEST_PG_BINDIR or Debian's /usr/lib/postgresql/<version>/bin.
type PostgresPair struct {
	t     testing.TB
	bin   string
	dirs  [2]string
	Ports [2]int
}

// pgBinDir finds the server binaries or fails the test saying what to install.
func pgBinDir(t testing.TB) string {
	t.Helper()
	dirs := []string{os.Getenv("HORIZON_TEST_PG_BINDIR")}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(found) - 1; i >= 0; i-- {
		dirs = append(dirs, found[i]) // the newest version first
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "pg_basebackup")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d
			}
		}
	}
	t.Fatalf("no Postgres server binaries (initdb, pg_ctl, pg_basebackup) in /usr/lib/postgresql/*/bin nor HORIZON_TEST_PG_BINDIR: " +
		"the failover tests run a real primary and standby; apt-get install postgresql")
	return ""
}

// StartPostgresPair initialises the primary, creates database db on it, and starts the
// standby; it returns once the standby streams synchronously.
func StartPostgresPair(t testing.TB, db string) *PostgresPair {
	t.Helper()
	p := &PostgresPair{t: t, bin: pgBinDir(t), Ports: [2]int{FreePort(t), FreePort(t)}}
	// Postgres refuses to run as root: as root, the servers run as the postgres user, in
	// directories it owns.
	root, err := os.MkdirTemp("", "hz-pgpair-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	p.dirs = [2]string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, the failover test needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	p.run("initdb", "-D", p.dirs[0], "-U", "postgres", "--auth=trust", "--no-sync")
	p.configure(0)
	p.run("pg_ctl", "-D", p.dirs[0], "-l", filepath.Join(root, "a.log"), "-w", "start")
	t.Cleanup(func() { p.stop(0) })
	p.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Ports[0]), "-U", "postgres", "-D", p.dirs[1], "-R", "-X", "stream")
	p.configure(1)
	p.run("pg_ctl", "-D", p.dirs[1], "-l", filepath.Join(root, "b.log"), "-w", "start")
	t.Cleanup(func() { p.stop(1) })
	// Synchronous from here: set on the primary only, so that the standby, once promoted, does
	// not wait for a standby of its own.
	p.exec(0, "postgres", `ALTER SYSTEM SET synchronous_standby_names = '*'`)
	p.exec(0, "postgres", `SELECT pg_reload_conf()`)
	Eventually(t, 30*time.Second, "the standby did not stream synchronously", func() bool {
		c, err := pgx.Connect(context.Background(), p.NodeURL(0, "postgres"))
		if err != nil {
			return false
		}
		defer c.Close(context.Background())
		var n int
		return c.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'`).Scan(&n) == nil && n == 1
	})
	p.exec(0, "postgres", `CREATE DATABASE `+pgx.Identifier{db}.Sanitize())
	return p
}

// URL is the multi-host URL of database db that a failover-aware client uses.
func (p *PostgresPair) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?target_session_attrs=read-write&connect_timeout=2&sslmode=disable",
		p.Ports[0], p.Ports[1], db)
}

// NodeURL is the URL of database db on node i alone.
func (p *PostgresPair) NodeURL(i int, db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", p.Ports[i], db)
}

// StopPrimary stops the primary at once (pg_ctl -m immediate: no shutdown checkpoint, as a
// crash) and promotes the standby.
func (p *PostgresPair) StopPrimary() {
	p.t.Helper()
	p.stop(0)
	p.run("pg_ctl", "-D", p.dirs[1], "-w", "promote")
}

// DemotePrimaryInPlace makes the primary read only while it keeps running and its sessions
// stay open (what a switchover does before the switch), then promotes the standby.
func (p *PostgresPair) DemotePrimaryInPlace() {
	p.t.Helper()
	p.exec(0, "postgres", `ALTER SYSTEM SET default_transaction_read_only = on`)
	p.exec(0, "postgres", `SELECT pg_reload_conf()`)
	p.run("pg_ctl", "-D", p.dirs[1], "-w", "promote")
}

func (p *PostgresPair) configure(i int) {
	p.t.Helper()
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nwal_level = replica\n"+
		"max_wal_senders = 4\nhot_standby = on\nfsync = off\nfull_page_writes = off\nshared_buffers = 16MB\nmax_connections = 60\n",
		p.Ports[i], p.dirs[i])
	f, err := os.OpenFile(filepath.Join(p.dirs[i], "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(conf); err != nil {
		p.t.Fatal(err)
	}
}

func (p *PostgresPair) stop(i int) {
	cmd := p.command("pg_ctl", "-D", p.dirs[i], "-m", "immediate", "-w", "stop")
	_ = cmd.Run() // already stopped is fine
}

func (p *PostgresPair) exec(i int, db, sql string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, p.NodeURL(i, db))
	if err != nil {
		p.t.Fatalf("connect to node %d: %v", i, err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		p.t.Fatalf("%s on node %d: %v", sql, i, err)
	}
}

func (p *PostgresPair) run(name string, args ...string) {
	p.t.Helper()
	cmd := p.command(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func (p *PostgresPair) command(name string, args ...string) *exec.Cmd {
	bin := filepath.Join(p.bin, name)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
	}
	return exec.Command(bin, args...)
}
