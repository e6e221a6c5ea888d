// Package workertest starts Horizon's workers in process for tests, on the database, Redis
// namespace and secret box of an API under test (functions/apitest), with settings that make
// the sandbox's builds quick, and the production settings otherwise: a plugin cache, so work
// dirs are kept between steps as deploy/README recommends.
package workertest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"horizon/shared/logstream"
	"horizon/shared/notify"
	"horizon/shared/queue"
	"horizon/shared/secrets"
	"horizon/shared/terraform"
	"horizon/shared/testkit"
	"horizon/workers/worker"
)

// Deps is what the workers share with the API under test.
type Deps struct {
	DB        *pgxpool.Pool
	Redis     redis.UniversalClient
	Box       *secrets.Box
	Namespace string
}

// Options tune the workers; zero values are the defaults said.
type Options struct {
	// TerraformBin overrides HORIZON_TERRAFORM_BIN.
	TerraformBin string
	// Concurrency (8) and Heartbeat (1 s) of the workers.
	Concurrency int
	Heartbeat   time.Duration
	// VMSSHPort moves the machines' SSH port (HORIZON_VM_SSH_PORT).
	VMSSHPort int
	// WorkRoot holds the Terraform work dirs and the plugin cache (a temporary directory).
	WorkRoot string
	// Webhooks are the ranges webhook deliveries may reach although refused by default
	// (HORIZON_WEBHOOK_ALLOW_CIDRS), e.g. a test's receiver on loopback, and their resolver.
	Webhooks notify.Guard
	// WebhookTimeout bounds one delivery attempt (2 s).
	WebhookTimeout time.Duration
	// OutboxSweep runs the webhook outbox's sweep (webhook:dispatch) every
	// queue.WebhookDispatchInterval, as production's scheduler does; tests that do not deliver
	// webhooks, or drive DispatchDue themselves, leave it off.
	OutboxSweep bool
}

// Start starts the workers; they stop when the test ends.
func Start(t testing.TB, d Deps, o Options) *worker.Worker {
	t.Helper()
	w := build(t, d, o)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

// build makes the workers Start starts and Kinds does not; they are shut down when the test
// ends (a no-op for a server never started, but for the Terraform state backend).
func build(t testing.TB, d Deps, o Options) *worker.Worker {
	t.Helper()
	tfBin := o.TerraformBin
	if tfBin == "" {
		tfBin = os.Getenv("HORIZON_TERRAFORM_BIN")
	}
	bin, err := terraform.FindBinary(context.Background(), tfBin)
	if err != nil {
		t.Fatal(err)
	}
	root := o.WorkRoot
	if root == "" {
		root = t.TempDir()
	}
	w, err := worker.New(worker.Config{DB: d.DB, Redis: d.Redis, Box: d.Box, Namespace: d.Namespace,
		Concurrency: or(o.Concurrency, 8), Heartbeat: or(o.Heartbeat, time.Second),
		Log: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})), Git: testkit.GitCache(t),
		// A test's drift checks read every config at once: production spreads a periodic
		// check's reads over half the drift interval (minutes), which a test would wait out.
		DriftSpread:      -1,
		ScriptSSHTimeout: 30 * time.Second, ShutdownTimeout: 10 * time.Second, VMSSHPort: o.VMSSHPort,
		LogClient:       logstream.New(d.Redis, d.DB, logstream.Config{Prefix: d.Namespace}),
		ISORetryBackoff: 50 * time.Millisecond, ProxmoxTaskPoll: 20 * time.Millisecond,
		Webhooks: notify.Config{Guard: o.Webhooks, Timeout: or(o.WebhookTimeout, 2*time.Second)},
		Terraform: terraform.Config{Binary: bin, WorkRoot: root, GracePeriod: 5 * time.Second,
			PluginCacheDir: filepath.Join(root, "plugins")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)
	if o.OutboxSweep {
		sweep(t, w)
	}
	return w
}

// sweep enqueues the due webhook deliveries every queue.WebhookDispatchInterval until the test
// ends (its cleanup runs before the workers' shutdown: cleanups run last-in first-out).
func sweep(t testing.TB, w *worker.Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(queue.WebhookDispatchInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := w.Notify.DispatchDue(ctx); err != nil && ctx.Err() == nil {
					t.Logf("webhook outbox sweep: %v", err)
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// testLog writes the workers' log to the test's.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
