// Command dev runs Horizon on a developer's machine: `go tool task up` calls it.
//
// It makes sure Postgres and Redis answer — using the ones already running on their default
// ports, else starting throwaway instances from local binaries under .data/, else `docker compose`
// when a Docker engine answers, else saying exactly what is missing — then builds and starts the
// API, the workers and the Proxmox VE sandbox (registered as the server "sandbox", with the
// example template sandbox-vm published from deploy/examples) with readable, prefixed logs, builds
// the web console (deploy/web) and serves it on its own origin, registers a demo SSH key for the
// admin (its private half in .data/demo_ssh_key) so that the example deploys at once, and prints
// the URLs and a console link that signs in as the admin. Keys and the admin token are generated
// once into .data/ and reused, so restarts keep working. Ctrl-C stops everything it started.
//
// It narrates: a cold machine spends many minutes downloading and compiling before anything
// answers, so every step says what it does and how long it usually takes, speaks up every 30 s
// while it runs, and says how long it took (progress.go).
//
// The console link carries a one-time sign-in code (POST /v1/sign-in-codes), never the admin's
// token: a link lands in the browser's history. `dev sign-in` (`go tool task sign-in`) prints a
// fresh one for a running `up`.
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
	"strings"
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
	if len(os.Args) > 1 && os.Args[1] == "sign-in" {
		return printSignInLink(ctx, data)
	}
	var procs processes
	defer procs.stopAll()
	// Clones on one machine share its Postgres and Redis: each gets a database and a Redis
	// namespace of its own, named after where it is.
	name := checkoutName(root)
	database = "horizon_" + name
	p := &progress{out: os.Stdout, total: 9, every: 30 * time.Second}

	var pgURL, redisURL string
	err = p.step("Postgres: using 127.0.0.1:5432, or starting one", "seconds", func() (err error) {
		pgURL, err = ensurePostgres(ctx, data, &procs)
		return err
	})
	if err != nil {
		return err
	}
	err = p.step("Redis: using 127.0.0.1:6379, or starting one", "seconds", func() (err error) {
		redisURL, err = ensureRedis(ctx, data, &procs)
		return err
	})
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

	var sandbox sandboxState
	var nodeKey string
	err = p.step("building and starting the Proxmox VE sandbox: go build ./deploy/sandbox",
		"first time on a cold machine 1-4 min: Go downloads and compiles its modules; then seconds", func() (err error) {
			sandbox, nodeKey, err = startSandbox(ctx, root, data, vmSSHPort, &procs)
			return err
		})
	if err != nil {
		return err
	}
	bin := filepath.Join(data, "bin")
	for _, cmd := range []struct{ pkg, what string }{{"functions", "the API"}, {"workers", "the workers"}} {
		err := p.step("building "+cmd.what+": go build ./"+cmd.pkg,
			"first time on a cold machine 2-6 min: more modules to download and compile; then seconds", func() error {
				return build(ctx, root, cmd.pkg, filepath.Join(bin, cmd.pkg))
			})
		if err != nil {
			return err
		}
	}
	url := "http://" + listen
	err = p.step("starting the API and the workers (they apply the database migrations)", "seconds", func() error {
		if err := procs.start(ctx, "api", env, filepath.Join(bin, "functions")); err != nil {
			return err
		}
		if err := procs.start(ctx, "workers", env, filepath.Join(bin, "workers")); err != nil {
			return err
		}
		return waitReady(ctx, url+"/readyz", 60*time.Second)
	})
	if err != nil {
		return err
	}
	var dist string
	consoleErr := p.step("building the web console in deploy/web: npm ci when node_modules is stale, then tsc and vite build",
		"first time 1-3 min: npm downloads about 110 packages; then 20-60 s", func() (err error) {
			dist, err = buildConsole(ctx, root)
			return err
		})
	switch {
	case errors.Is(consoleErr, errNoNode):
		fmt.Println("horizon dev: npm is not installed, so the web console is not built; the API runs alone (install Node 20+ for the console)")
	case consoleErr != nil:
		return fmt.Errorf("build the web console: %w", consoleErr)
	}
	var team, demoKey string
	err = p.step("registering the sandbox, the example template, a team and a demo SSH key", "seconds", func() (err error) {
		if err := registerSandbox(ctx, url, adminToken, sandbox, nodeKey); err != nil {
			return fmt.Errorf("register the sandbox: %w", err)
		}
		if err := registerExample(ctx, url, adminToken, root, data); err != nil {
			return fmt.Errorf("register the example template: %w", err)
		}
		if team, err = ensureTeam(ctx, url, adminToken); err != nil {
			return fmt.Errorf("put the admin in a team: %w", err)
		}
		if demoKey, err = registerDemoKey(ctx, url, adminToken, data); err != nil {
			return fmt.Errorf("register the demo SSH key: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	console := "  Console:      not built (npm is not installed)\n"
	err = p.step("serving the console on "+consoleURL, "", func() error {
		if consoleErr != nil {
			return nil
		}
		if err := serveConsole(ctx, dist, consoleListen, url); err != nil {
			return err
		}
		link, err := signInLink(ctx, url, adminToken, consoleURL)
		if err != nil {
			return err
		}
		console = fmt.Sprintf("  Console:      %s   (signs in as the admin once, within 10 minutes;\n"+
			"                `go tool task sign-in` prints a new link)\n", link)
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf(`
Horizon is running.
%s  API:          %s   (contract: %s/openapi.yaml)
  Admin token:  in .data/admin.token
  Proxmox:      the sandbox at %s is registered as the server "sandbox", in environment "sandbox"
  Template:     "sandbox-vm" (deploy/examples/sandbox-vm, published to .data/examples/sandbox-vm)
  Team:         the admin belongs to %q: create stacks there
  SSH key:      "demo", registered for the admin: its private half is %s
                (ssh -i %s -p %s root@<machine's address> logs in to a deployed machine)
  ISOs:         none; an admin registers an ISO template (POST /v1/iso-templates, see
                deploy/README.md "ISO builds"), then builds it from the console's ISOs page
  Try:          curl -H "Authorization: Bearer $(cat .data/admin.token)" %s/v1/me
Ctrl-C stops everything started here; state is kept in .data/.

`, console, url, url, sandbox.Clusters[0].URL, team, demoKey, demoKey, vmSSHPort, url)
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

// signInLink mints a one-time sign-in code with token and returns the console link that
// carries it: the token itself never goes into a URL, which browsers keep in their history.
func signInLink(ctx context.Context, apiURL, token, consoleURL string) (string, error) {
	var code struct {
		Code string `json:"code"`
	}
	if err := call(ctx, apiURL, token, "POST", "/v1/sign-in-codes", nil, &code); err != nil {
		return "", fmt.Errorf("mint a sign-in code: %w", err)
	}
	return consoleURL + "/#code=" + code.Code, nil
}

// printSignInLink prints a fresh sign-in link for the admin of the running `up`
// (`go tool task sign-in`).
func printSignInLink(ctx context.Context, data string) error {
	b, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		return errors.New("no .data/admin.token: run `go tool task up` first")
	}
	link, err := signInLink(ctx, "http://"+envOr("HORIZON_LISTEN", "127.0.0.1:8080"), strings.TrimSpace(string(b)),
		"http://"+envOr("HORIZON_CONSOLE_LISTEN", "127.0.0.1:8090"))
	if err != nil {
		return fmt.Errorf("%w (is `go tool task up` running?)", err)
	}
	fmt.Println(link + "   (signs in as the admin once, within 10 minutes)")
	return nil
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
