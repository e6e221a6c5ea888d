// Command dev runs Horizon on a developer's machine: `go tool task up` calls it.
//
// It makes sure Postgres and Redis answer — using the ones already running on their default
// ports, else starting throwaway instances from local binaries under .data/, else `docker compose`
// when a Docker engine answers, else saying exactly what is missing — then builds and starts the
// API, the workers and the Proxmox VE sandbox (registered as the server "sandbox", with the
// example template sandbox-vm published from deploy/examples) with readable, prefixed logs, builds
// the web console (deploy/web) and serves it on its own origin, and prints the URLs, an admin
// token and a console link signed in with it. Keys
// and the token are generated once into .data/ and reused, so restarts keep working. Ctrl-C stops
// everything it started.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "horizon dev:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root, err := repoRoot()
	if err != nil {
		return err
	}
	data := filepath.Join(root, ".data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	var procs processes
	defer procs.stopAll()
	// Clones on one machine share its Postgres and Redis: each gets a database and a Redis
	// namespace of its own, named after where it is.
	name := checkoutName(root)
	database = "horizon_" + name

	pgURL, err := ensurePostgres(ctx, data, &procs)
	if err != nil {
		return err
	}
	redisURL, err := ensureRedis(ctx, data, &procs)
	if err != nil {
		return err
	}
	secretKey, err := readOrCreate(filepath.Join(data, "secret.key"), newSecretKey)
	if err != nil {
		return err
	}
	adminToken, err := readOrCreate(filepath.Join(data, "admin.token"), newAdminToken)
	if err != nil {
		return err
	}
	listen := envOr("HORIZON_LISTEN", "127.0.0.1:8080")
	// The console is served on its own origin, as a CDN would serve it, so that CORS and
	// config.json work here exactly as in production.
	consoleListen := envOr("HORIZON_CONSOLE_LISTEN", "127.0.0.1:8090")
	consoleURL := "http://" + consoleListen
	// The sandbox's VMs serve SSH on their own 127.x address; port 22 needs root, so an
	// unprivileged `up` moves them, and tells the workers.
	vmSSHPort := "22"
	if os.Geteuid() != 0 {
		vmSSHPort = "2222"
	}
	vmSSHPort = envOr("HORIZON_VM_SSH_PORT", vmSSHPort)
	env := append(os.Environ(),
		"HORIZON_DATABASE_URL="+pgURL,
		"HORIZON_REDIS_URL="+redisURL,
		"HORIZON_SECRET_KEY="+secretKey,
		"HORIZON_BOOTSTRAP_ADMIN_TOKEN="+adminToken,
		"HORIZON_LISTEN="+listen,
		"HORIZON_VM_SSH_PORT="+vmSSHPort,
		"HORIZON_LOG_FORMAT="+envOr("HORIZON_LOG_FORMAT", "text"),
		"HORIZON_NAMESPACE="+envOr("HORIZON_NAMESPACE", "hz-"+name),
		"HORIZON_CORS_ORIGINS="+envOr("HORIZON_CORS_ORIGINS", consoleURL),
	)

	sandbox, nodeKey, err := startSandbox(ctx, root, data, vmSSHPort, &procs)
	if err != nil {
		return err
	}

	bin := filepath.Join(data, "bin")
	for _, cmd := range []string{"functions", "workers"} {
		if err := build(ctx, root, cmd, filepath.Join(bin, cmd)); err != nil {
			return err
		}
	}
	if err := procs.start(ctx, "api", env, filepath.Join(bin, "functions")); err != nil {
		return err
	}
	if err := procs.start(ctx, "workers", env, filepath.Join(bin, "workers")); err != nil {
		return err
	}
	dist, consoleErr := buildConsole(ctx, root)
	switch {
	case errors.Is(consoleErr, errNoNode):
		fmt.Println("horizon dev: npm is not installed, so the web console is not built; the API runs alone (install Node 20+ for the console)")
	case consoleErr != nil:
		return fmt.Errorf("build the web console: %w", consoleErr)
	}
	url := "http://" + listen
	if err := waitReady(ctx, url+"/readyz", 60*time.Second); err != nil {
		return err
	}
	if err := registerSandbox(ctx, url, adminToken, sandbox, nodeKey); err != nil {
		return fmt.Errorf("register the sandbox: %w", err)
	}
	if err := registerExample(ctx, url, adminToken, root, data); err != nil {
		return fmt.Errorf("register the example template: %w", err)
	}
	team, err := ensureTeam(ctx, url, adminToken)
	if err != nil {
		return fmt.Errorf("put the admin in a team: %w", err)
	}
	console := "  Console:      not built (npm is not installed)\n"
	if consoleErr == nil {
		if err := serveConsole(ctx, dist, consoleListen, url); err != nil {
			return err
		}
		// The token rides in the fragment, which the browser never sends; the console moves
		// it to sessionStorage and wipes it from the address bar at once.
		console = fmt.Sprintf("  Console:      %s/#token=%s   (signed in as the admin)\n", consoleURL, adminToken)
	}
	fmt.Printf(`
Horizon is running.
%s  API:          %s   (contract: %s/openapi.yaml)
  Admin token:  %s
  Proxmox:      the sandbox at %s is registered as the server "sandbox", in environment "sandbox"
  Template:     "sandbox-vm" (deploy/examples/sandbox-vm, published to .data/examples/sandbox-vm)
  Team:         the admin belongs to %q: create stacks there
  Try:          curl -H "Authorization: Bearer %s" %s/v1/me
Ctrl-C stops everything started here; state is kept in .data/.

`, console, url, url, adminToken, sandbox.Clusters[0].URL, team, adminToken, url)
	select {
	case <-ctx.Done():
		return nil
	case err := <-procs.exited:
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the repository (no go.mod found)")
		}
		dir = parent
	}
}

// checkoutName is 8 hex digits of the checkout's path: the same for every `up` of one clone,
// another for each clone.
func checkoutName(root string) string {
	sum := sha256.Sum256([]byte(root))
	return hex.EncodeToString(sum[:4])
}
