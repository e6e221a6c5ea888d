package pve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Sandbox is a running set of PVE clusters. Start creates one; Close stops it. Its methods
// are safe for concurrent use.
type Sandbox struct {
	cfg      Config
	dataDir  string
	tempData bool // dataDir is a temporary directory, removed by Close
	log      *slog.Logger
	knobs    *knobs
	clusters []*Cluster

	ctx    context.Context // cancelled by Close; tasks and SSH sessions end with it
	cancel context.CancelFunc
	wg     sync.WaitGroup // task goroutines
}

// Start validates cfg, creates the clusters (loading their inventory from cfg.DataDir when
// it holds one) and starts every listener: one HTTPS API listener per cluster and one SSH
// listener per node. ctx bounds start-up only; the sandbox runs until Close.
func Start(ctx context.Context, cfg Config) (*Sandbox, error) {
	return StartWithLogger(ctx, cfg, slog.New(slog.DiscardHandler))
}

// StartWithLogger is Start with a logger for the sandbox's own diagnostics (task failures,
// SSH sessions); Start discards them.
func StartWithLogger(ctx context.Context, cfg Config, log *slog.Logger) (*Sandbox, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("sandbox config: %w", err)
	}
	sb := &Sandbox{cfg: cfg, dataDir: cfg.DataDir, log: log}
	sb.knobs = newKnobs(cfg.Latency)
	if sb.dataDir == "" {
		dir, err := os.MkdirTemp("", "pve-sandbox-")
		if err != nil {
			return nil, fmt.Errorf("sandbox data dir: %w", err)
		}
		sb.dataDir, sb.tempData = dir, true
	}
	sb.ctx, sb.cancel = context.WithCancel(context.Background())
	for _, cc := range cfg.Clusters {
		c := newCluster(sb, cc)
		sb.clusters = append(sb.clusters, c) // so that Close stops what start opened
		if err := c.start(ctx); err != nil {
			sb.Close()
			return nil, fmt.Errorf("cluster %s: %w", cc.Name, err)
		}
	}
	return sb, nil
}

// Close stops every listener, SSH session and running task, saves the inventory (when a
// data directory was given) and removes the temporary data directory otherwise. Tasks still
// running are abandoned, as a powered-off host would.
func (sb *Sandbox) Close() error {
	sb.cancel()
	var errs []error
	for _, c := range sb.clusters {
		errs = append(errs, c.stop())
	}
	sb.wg.Wait()
	for _, c := range sb.clusters {
		if c.loaded {
			// A cluster whose inventory did not load must not overwrite it with nothing.
			errs = append(errs, c.save())
		}
	}
	if sb.tempData {
		errs = append(errs, os.RemoveAll(sb.dataDir))
	}
	return errors.Join(errs...)
}

// Cluster returns the named cluster, or nil.
func (sb *Sandbox) Cluster(name string) *Cluster {
	for _, c := range sb.clusters {
		if c.cfg.Name == name {
			return c
		}
	}
	return nil
}

// Clusters returns every cluster, in config order.
func (sb *Sandbox) Clusters() []*Cluster { return append([]*Cluster(nil), sb.clusters...) }

// AdminToken is the token the admin endpoints want ("" when they are disabled).
func (sb *Sandbox) AdminToken() string { return sb.cfg.AdminToken }

// SetLatency adds d to every API call from now on (0 removes it).
func (sb *Sandbox) SetLatency(d time.Duration) { sb.knobs.setLatency("", d) }

// SetRouteLatency adds d to calls of one route, named "METHOD /pattern" as in PVE's schema,
// e.g. "POST /nodes/{node}/qemu" (0 removes it). It adds to the global latency.
func (sb *Sandbox) SetRouteLatency(route string, d time.Duration) { sb.knobs.setLatency(route, d) }

// FailNext makes the next n calls of a route ("METHOD /pattern", e.g.
// "POST /nodes/{node}/qemu") fail with status and message, in PVE's error shape.
func (sb *Sandbox) FailNext(route string, n, status int, message string) {
	sb.knobs.failNext(route, n, status, message)
}

// HangTasks makes tasks of the given PVE task type (qmcreate, qmstart, qmclone, download,
// ...) stay running, including those already running, until ReleaseTasks.
func (sb *Sandbox) HangTasks(taskType string) { sb.knobs.hang(taskType) }

// ReleaseTasks lets hung tasks of the type finish (and new ones run normally).
func (sb *Sandbox) ReleaseTasks(taskType string) { sb.knobs.release(taskType) }

// FailDownloads makes the next n download-url tasks fail as a flaky mirror would
// ("download failed: 503 Service Unavailable"), to exercise retries.
func (sb *Sandbox) FailDownloads(n int) { sb.knobs.failDownloads(n) }
